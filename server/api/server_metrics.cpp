#include "server/api/server_metrics.h"

#include <fmt/format.h>

namespace dormant::server::api {
namespace {

struct CounterText {
  const char* name;
  const char* help;
};

constexpr std::array<CounterText, static_cast<size_t>(Counter::kCount)> kCounterTexts = {{
    {"dormant_server_heartbeats_total", "Heartbeats accepted."},
    {"dormant_server_commands_delivered_total",
     "Commands delivered to their host for the first time."},
    {"dormant_server_command_completions_total", "Command completions accepted."},
    {"dormant_server_command_completions_refused_total",
     "Command completions refused: unknown or replaced command, second report, wrong host."},
    {"dormant_server_profiles_uploaded_total", "Profiles uploaded and stored."},
    {"dormant_server_profile_bytes_total", "Uncompressed bytes of the profiles stored."},
    {"dormant_server_storage_errors_total", "Requests that failed in the database or on disk."},
    {"dormant_server_storage_refusals_total",
     "Writes refused with 503 because the data directory is full or read-only."},
    {"dormant_server_long_polls_woken_total",
     "Held heartbeats answered because their host got a command."},
    {"dormant_server_long_polls_expired_total",
     "Held heartbeats answered because their wait ran out."},
}};

}  // namespace

void ServerMetrics::count_request(std::string_view endpoint, unsigned status) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(std::string(endpoint), status);
  ++requests_[key];
}

uint64_t ServerMetrics::requests(std::string_view endpoint, unsigned status) const {
  std::lock_guard lock(mutex_);
  auto found = requests_.find(std::make_pair(std::string(endpoint), status));
  return found == requests_.end() ? 0 : found->second;
}

std::string ServerMetrics::render() const {
  std::string text =
      "# HELP dormant_server_requests_total HTTP requests by endpoint and status code.\n"
      "# TYPE dormant_server_requests_total counter\n";
  {
    std::lock_guard lock(mutex_);
    for (const auto& [key, count] : requests_) {
      text += fmt::format("dormant_server_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n",
                          key.first, key.second, count);
    }
  }
  for (size_t i = 0; i < kCounterTexts.size(); ++i) {
    text += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", kCounterTexts[i].name,
                        kCounterTexts[i].help, counters_[i].load(std::memory_order_relaxed));
  }
  return text;
}

}  // namespace dormant::server::api
