#include "agent/resource_audit.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace dormant::agent {
namespace {

bool is_socket(const std::string& target) { return target.starts_with("socket:"); }
bool is_bpf(const std::string& target) { return target.starts_with("anon_inode:bpf"); }
bool is_perf_event(const std::string& target) { return target == "anon_inode:[perf_event]"; }

// Targets of fds that are not sockets, sorted.
std::vector<std::string> fd_targets(const procfs::ResourceUsage& usage) {
  std::vector<std::string> targets;
  for (const auto& fd : usage.fds) {
    if (!is_socket(fd.target)) targets.push_back(fd.target);
  }
  std::sort(targets.begin(), targets.end());
  return targets;
}

// What `now` holds that `baseline` does not; both sorted.
std::vector<std::string> not_at_baseline(const std::vector<std::string>& now,
                                         const std::vector<std::string>& baseline) {
  std::vector<std::string> extra;
  std::set_difference(now.begin(), now.end(), baseline.begin(), baseline.end(),
                      std::back_inserter(extra));
  return extra;
}

// The first few, joined for a log line.
std::string first_few(const std::vector<std::string>& items) {
  std::string listed;
  for (size_t i = 0; i < items.size() && i < 8; ++i) listed += (i ? ", " : "") + items[i];
  return listed;
}

}  // namespace

IdleFootprint IdleFootprint::of(const procfs::ResourceUsage& usage) {
  IdleFootprint footprint;
  for (const auto& fd : usage.fds) {
    if (is_socket(fd.target)) {
      ++footprint.sockets;
    } else {
      ++footprint.fds;
    }
    footprint.bpf_objects += is_bpf(fd.target);
    footprint.perf_events += is_perf_event(fd.target);
  }
  footprint.children = usage.children.size();
  footprint.threads = usage.threads;
  footprint.rss_kb = usage.memory.rss_kb;
  footprint.rss_anon_kb = usage.memory.rss_anon_kb;
  footprint.uss_kb = usage.memory.uss_kb;
  footprint.pss_kb = usage.memory.pss_kb;
  return footprint;
}

nlohmann::json IdleFootprint::to_json() const {
  return {{"open_fds", fds},
          {"sockets", sockets},
          {"bpf_objects", bpf_objects},
          {"perf_events", perf_events},
          {"children", children},
          {"threads", threads},
          {"rss_kb", rss_kb},
          {"uss_kb", uss_kb},
          {"rss_anon_kb", rss_anon_kb},
          {"pss_kb", pss_kb}};
}

nlohmann::json AuditReport::to_json() const {
  return {{"clean", clean()},
          {"excess", excess},
          {"after", now.to_json()},
          {"memory_compared", memory_compared}};
}

Result<void> ResourceAudit::take_baseline() {
  auto usage = procfs::resource_usage();
  if (!usage) return std::move(usage).take_error();
  baseline_ = IdleFootprint::of(*usage);
  baseline_fd_targets_ = fd_targets(*usage);
  auto mapped = procfs::mapped_files();
  if (!mapped) return std::move(mapped).take_error();
  baseline_mapped_files_ = std::move(*mapped);
  has_baseline_ = true;
  return {};
}

Result<bool> ResourceAudit::connections_above_baseline() const {
  auto fds = procfs::open_fds();
  if (!fds) return std::move(fds).take_error();
  size_t sockets = std::count_if(fds->begin(), fds->end(),
                                 [](const procfs::OpenFd& fd) { return is_socket(fd.target); });
  return sockets > baseline_.sockets;
}

Result<AuditReport> ResourceAudit::audit(bool with_memory) const {
  auto usage = procfs::resource_usage();
  if (!usage) return std::move(usage).take_error();
  AuditReport report;
  report.memory_compared = kMemoryAudited && with_memory;
  report.now = IdleFootprint::of(*usage);
  if (report.now.fds > baseline_.fds) {
    std::string listed = first_few(not_at_baseline(fd_targets(*usage), baseline_fd_targets_));
    report.excess.push_back(std::to_string(report.now.fds - baseline_.fds) +
                            " open fds more than at idle" + (listed.empty() ? "" : ": " + listed));
  }
  if (report.now.sockets > std::max(baseline_.sockets, limits_.max_sockets)) {
    report.excess.push_back(std::to_string(report.now.sockets) + " sockets open; at most " +
                            std::to_string(std::max(baseline_.sockets, limits_.max_sockets)) +
                            " are the agent's connections to the server");
  }
  if (report.now.children > baseline_.children) {
    std::string pids;
    for (pid_t pid : usage->children) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    report.excess.push_back(std::to_string(report.now.children - baseline_.children) +
                            " child processes more than at idle: " + pids);
  }
  if (report.now.threads > baseline_.threads) {
    report.excess.push_back(std::to_string(report.now.threads - baseline_.threads) +
                            " threads more than at idle");
  }
  auto mapped = procfs::mapped_files();
  if (!mapped) return std::move(mapped).take_error();
  if (auto extra = not_at_baseline(*mapped, baseline_mapped_files_); !extra.empty()) {
    report.excess.push_back(std::to_string(extra.size()) +
                            " files mapped that were not at idle: " + first_few(extra));
  }
  auto memory_above = [&](const char* what, uint64_t now, uint64_t idle, uint64_t slack) {
    if (report.memory_compared && now > idle + slack) {
      report.excess.push_back(std::string(what) + " " + std::to_string(now) + " kB, " +
                              std::to_string(now - idle) + " kB above idle");
    }
  };
  memory_above("USS", report.now.uss_kb, baseline_.uss_kb, limits_.uss_slack_kb);
  memory_above("RssAnon", report.now.rss_anon_kb, baseline_.rss_anon_kb, limits_.anon_slack_kb);
  for (const auto& excess : report.excess) spdlog::error("teardown audit: {}", excess);
  return report;
}

}  // namespace dormant::agent
