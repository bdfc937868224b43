// The teardown audit: after the last session ends, what the process holds is compared with the
// idle baseline (open fds, child processes, threads, BPF objects, mapped files, memory). Anything
// above it is a leak of the session, logged as an error and reported in the agent's health.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/procfs.h"
#include "common/result.h"

namespace dormant::agent {

struct IdleFootprint {
  size_t fds = 0;  // not counting the sockets to the server, which come and go with keep-alive
  size_t sockets = 0;
  size_t bpf_objects = 0;  // fds of BPF programs, maps and links
  size_t perf_events = 0;  // fds of perf events: the samplers' per-CPU events, the GPU uprobes
  size_t children = 0;
  int threads = 0;
  uint64_t rss_kb = 0;  // reported, not compared: it counts pages shared with other processes
  uint64_t rss_anon_kb = 0;
  uint64_t uss_kb = 0;
  uint64_t pss_kb = 0;

  static IdleFootprint of(const procfs::ResourceUsage& usage);
  nlohmann::json to_json() const;
};

// AddressSanitizer keeps freed memory in its quarantine: in such a build RSS says nothing of
// leaks, and the audit does not compare it.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kMemoryAudited = false;
#else
inline constexpr bool kMemoryAudited = true;
#endif

struct AuditReport {
  IdleFootprint now;
  bool memory_compared = kMemoryAudited;
  std::vector<std::string> excess;  // "2 open fds more than at idle: pipe:[123], ..."
  bool clean() const { return excess.empty(); }
  nlohmann::json to_json() const;
};

class ResourceAudit {
 public:
  struct Limits {
    size_t max_sockets = 0;  // the connections to the server the agent may keep open
    // Growth over the baseline that is not reported: for RssAnon (the heap) and for USS, which
    // also counts the agent's own code pages a session has touched.
    uint64_t anon_slack_kb = 0;
    uint64_t uss_slack_kb = 0;
  };
  explicit ResourceAudit(Limits limits) : limits_(limits) {}

  // Reads the process now as its idle baseline.
  Result<void> take_baseline();
  bool has_baseline() const { return has_baseline_; }
  const IdleFootprint& baseline() const { return baseline_; }

  // Whether more connections are open now than at the baseline (reads only the fd table).
  Result<bool> connections_above_baseline() const;

  // Compares the process now with the baseline; logs what is above it. Memory is compared only
  // `with_memory` (and in builds without AddressSanitizer): right after a session, the
  // connections that deliver its completion and profiles still hold their TLS buffers.
  Result<AuditReport> audit(bool with_memory) const;

 private:
  Limits limits_;
  bool has_baseline_ = false;
  IdleFootprint baseline_;
  std::vector<std::string> baseline_fd_targets_;
  std::vector<std::string> baseline_mapped_files_;
};

}  // namespace dormant::agent
