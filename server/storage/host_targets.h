// One host's latest inventory, read once, against which any number of selectors are resolved in
// memory: a heartbeat's share of its service's subscriptions (up to 1,000 of 100 selectors each)
// costs two queries and a lookup per selector, not a query per selector.
//
// It picks what resolve_targets() (target_rows.h) picks on this host, the same way: the same
// members, compared as SQL compares them (a NULL column matches nothing).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

class HostTargets {
 public:
  // The inventory of `hostname` in `service`; nullopt when that host is not known or has not
  // been heard from since `active_since`.
  static Result<std::optional<HostTargets>> read(Database& db, const std::string& hostname,
                                                 const std::string& service,
                                                 TimePoint active_since);

  // What `query` picks on this host: nullopt for nothing, a nullopt pid list for the whole host
  // (kService and kHost), else its sorted pids.
  std::optional<std::optional<PidList>> resolve(const TargetQuery& query) const;
  // The same for selectors that may only pick this host: those naming another host are left out,
  // the others taken as naming this one (a subscription's, on a heartbeat of this host).
  std::optional<std::optional<PidList>> resolve_here(TargetScope scope, const std::string& service,
                                                     const std::vector<Selector>& selectors) const;

 private:
  struct Process {
    std::optional<std::string> pod_namespace, workload_name, workload_kind, pod_name;
    std::string container_name;
    std::string process_name;
    pid_t pid = 0;
  };
  std::optional<std::optional<PidList>> resolve(TargetScope scope, const std::string& service,
                                                const std::vector<Selector>& selectors,
                                                bool here) const;
  bool host_matches(const Selector& selector, bool by_host, bool here) const;
  static bool process_matches(const Selector& selector, const Process& process);
  // The processes a selector may pick, by its most telling member.
  const std::vector<size_t>* candidates(const Selector& selector) const;

  std::string hostname_;
  std::string ip_address_;
  std::vector<Process> processes_;
  std::vector<size_t> all_;
  std::unordered_map<pid_t, std::vector<size_t>> by_pid_;
  std::unordered_map<std::string, std::vector<size_t>> by_process_name_;
  std::unordered_map<std::string, std::vector<size_t>> by_container_name_;
};

}  // namespace dormant::server::storage
