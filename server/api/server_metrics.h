// The server's own counters, served at GET /metrics in the Prometheus text format.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace dormant::server::api {

enum class Counter {
  kHeartbeats,          // accepted heartbeats
  kCommandsDelivered,   // heartbeats that carried a command the host had not been sent yet
  kCompletions,         // command completions accepted
  kCompletionsRefused,  // completions refused (unknown command, second report, wrong host)
  kProfilesUploaded,
  kProfileBytes,      // uploaded collapsed text, uncompressed
  kStorageErrors,     // requests that failed in the store
  kStorageRefusals,   // writes refused with 503: the data directory is full or read-only
  kLongPollsWoken,    // held heartbeats answered because their host got a command
  kLongPollsExpired,  // held heartbeats answered because their wait ran out
  kCount,
};

class ServerMetrics {
 public:
  // `endpoint` is a route's pattern (never a raw path: hostile paths must not add series).
  void count_request(std::string_view endpoint, unsigned status);
  void add(Counter counter, uint64_t amount = 1) {
    counters_[static_cast<size_t>(counter)].fetch_add(amount, std::memory_order_relaxed);
  }
  uint64_t value(Counter counter) const {
    return counters_[static_cast<size_t>(counter)].load(std::memory_order_relaxed);
  }
  uint64_t requests(std::string_view endpoint, unsigned status) const;

  std::string render() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, unsigned>, uint64_t, std::less<>> requests_;
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Counter::kCount)> counters_{};
};

}  // namespace dormant::server::api
