#include "server/api/perf_event_check.h"

#include <algorithm>

#include "common/perf_events.h"
#include "wire/command_config.h"

namespace dormant::server::api {
namespace {

constexpr size_t kHostsNamed = 10;

// gProfiler's name for an event as agents and people write it: "cpu-cycles", "cpu/cycles/".
std::string event_name(std::string_view text) {
  if (text.starts_with("cpu/") && text.ends_with("/") && text.size() > 5) {
    text = text.substr(4, text.size() - 5);
  }
  if (auto known = perf_event_name(text)) return std::string(*known);
  if (text.starts_with("cpu-")) {
    if (auto known = perf_event_name(text.substr(4))) return std::string(*known);
  }
  return std::string(text);
}

}  // namespace

std::vector<std::string> requested_perf_events(const wire::ProfilingRequest& request) {
  if (request.request_type != wire::CommandType::kStart || !request.additional_args) {
    return {};
  }
  auto configs = request.additional_args->find("profiler_configs");
  if (configs == request.additional_args->end() || !configs->is_object()) return {};
  auto perf = configs->find("perf");
  if (perf == configs->end() || !perf->is_object()) return {};
  if (wire::turns_profiler_off(*perf)) return {};
  auto events = perf->find("events");
  if (events == perf->end() || !events->is_array()) return {};
  std::vector<std::string> names;
  for (const nlohmann::json& event : *events) {
    if (!event.is_string()) continue;
    std::string name = event_name(event.get<std::string>());
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::optional<Error> unsupported_perf_events(
    const wire::ProfilingRequest& request,
    const std::map<std::string, std::vector<std::string>>& supported_by_host) {
  std::vector<std::string> wanted = requested_perf_events(request);
  if (wanted.empty()) return std::nullopt;
  std::vector<std::string> lacking;
  for (const auto& [hostname, pids] : request.target_hosts) {
    std::vector<std::string> supported;
    if (auto found = supported_by_host.find(hostname); found != supported_by_host.end()) {
      for (const std::string& event : found->second) supported.push_back(event_name(event));
    }
    std::vector<std::string> missing;
    for (const std::string& event : wanted) {
      if (std::find(supported.begin(), supported.end(), event) == supported.end()) {
        missing.push_back(event);
      }
    }
    if (!missing.empty()) lacking.push_back(hostname + ": missing " + join(missing, ", "));
  }
  if (lacking.empty()) return std::nullopt;
  std::string message =
      "perf events not supported by " + std::to_string(lacking.size()) + " target host(s): ";
  for (size_t i = 0; i < lacking.size() && i < kHostsNamed; ++i) {
    message += (i == 0 ? "" : "; ") + lacking[i];
  }
  if (lacking.size() > kHostsNamed) {
    message += "; ...and " + std::to_string(lacking.size() - kHostsNamed) + " more host(s)";
  }
  return Error::problem(ErrorKind::kInvalidArgument, "additional_args.profiler_configs.perf.events",
                        message);
}

}  // namespace dormant::server::api
