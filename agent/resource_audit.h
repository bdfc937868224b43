// The teardown audit: after the last session ends, what the process holds is compared with the
// idle baseline (open fds, child processes, threads, BPF objects, memory). Anything above it is a
// leak of the session, logged as an error and reported in the agent's health.
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
  size_t children = 0;
  int threads = 0;
  uint64_t rss_kb = 0;
  uint64_t rss_anon_kb = 0;

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
  // `max_sockets`: the connections to the server the agent may keep open (one per client).
  // Growth over the baseline that is not reported: `anon_slack_kb` for RssAnon (the heap),
  // `rss_slack_kb` for VmRSS, which also counts the code pages a session has touched.
  ResourceAudit(size_t max_sockets, uint64_t anon_slack_kb, uint64_t rss_slack_kb)
      : max_sockets_(max_sockets), anon_slack_kb_(anon_slack_kb), rss_slack_kb_(rss_slack_kb) {}

  // Reads the process now as its idle baseline.
  Result<void> take_baseline();
  bool has_baseline() const { return has_baseline_; }
  const IdleFootprint& baseline() const { return baseline_; }

  // Compares the process now with the baseline; logs what is above it.
  Result<AuditReport> audit() const;

 private:
  size_t max_sockets_;
  uint64_t anon_slack_kb_;
  uint64_t rss_slack_kb_;
  bool has_baseline_ = false;
  IdleFootprint baseline_;
  std::vector<std::string> baseline_fd_targets_;
};

}  // namespace dormant::agent
