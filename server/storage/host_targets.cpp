#include "server/storage/host_targets.h"

#include <algorithm>

namespace dormant::server::storage {
namespace {

// A selector's member against a column: absent, it asks nothing; present, the column must hold
// the same text (a NULL column matches nothing, as in SQL).
bool same(const std::optional<std::string>& wanted, const std::optional<std::string>& held) {
  return !wanted || (held && *held == *wanted);
}

bool same(const std::optional<std::string>& wanted, const std::string& held) {
  return !wanted || held == *wanted;
}

}  // namespace

Result<std::optional<HostTargets>> HostTargets::read(Database& db, const std::string& hostname,
                                                     const std::string& service,
                                                     TimePoint active_since) {
  auto host = db.prepare(
      "SELECT ip_address FROM hosts WHERE hostname = ?1 AND service_name = ?2 AND "
      "last_heartbeat_ms >= ?3");
  if (!host) return std::move(host).take_error();
  host->bind_all(hostname, service, to_unix_ms(active_since));
  auto found = host->step();
  if (!found) return std::move(found).take_error();
  if (!*found) return std::optional<HostTargets>();
  HostTargets targets;
  targets.hostname_ = hostname;
  targets.ip_address_ = host->text(0);

  auto rows = db.prepare(R"sql(
SELECT c.namespace, c.workload_name, c.workload_kind, c.pod_name, c.container_name,
       p.process_name, p.pid
FROM host_containers c JOIN host_processes p
  ON p.hostname = c.hostname AND p.service_name = c.service_name AND p.position = c.position
WHERE c.hostname = ?1 AND c.service_name = ?2)sql");
  if (!rows) return std::move(rows).take_error();
  rows->bind_all(hostname, service);
  for (;;) {
    auto row = rows->step();
    if (!row) return std::move(row).take_error();
    if (!*row) break;
    size_t index = targets.processes_.size();
    Process& process = targets.processes_.emplace_back();
    process.pod_namespace = rows->optional_text(0);
    process.workload_name = rows->optional_text(1);
    process.workload_kind = rows->optional_text(2);
    process.pod_name = rows->optional_text(3);
    process.container_name = rows->text(4);
    process.process_name = rows->text(5);
    process.pid = static_cast<pid_t>(rows->int64(6));
    targets.all_.push_back(index);
    targets.by_pid_[process.pid].push_back(index);
    targets.by_process_name_[process.process_name].push_back(index);
    targets.by_container_name_[process.container_name].push_back(index);
  }
  return std::optional<HostTargets>(std::move(targets));
}

bool HostTargets::host_matches(const Selector& selector, bool by_host, bool here) const {
  if (!by_host) return true;
  return (here || same(selector.hostname, hostname_)) && same(selector.ip_address, ip_address_);
}

bool HostTargets::process_matches(const Selector& selector, const Process& process) {
  return same(selector.pod_namespace, process.pod_namespace) &&
         same(selector.workload_name, process.workload_name) &&
         same(selector.workload_kind, process.workload_kind) &&
         same(selector.pod_name, process.pod_name) &&
         same(selector.container_name, process.container_name) &&
         same(selector.process_name, process.process_name) &&
         (!selector.pid || process.pid == *selector.pid);
}

const std::vector<size_t>* HostTargets::candidates(const Selector& selector) const {
  static const std::vector<size_t> kNone;
  auto look_up = [](const auto& index, const auto& key) {
    auto found = index.find(key);
    return found == index.end() ? &kNone : &found->second;
  };
  if (selector.pid) return look_up(by_pid_, static_cast<pid_t>(*selector.pid));
  if (selector.process_name) return look_up(by_process_name_, *selector.process_name);
  if (selector.container_name) return look_up(by_container_name_, *selector.container_name);
  return &all_;
}

std::optional<std::optional<PidList>> HostTargets::resolve(const TargetQuery& query) const {
  return resolve(query.scope, query.service_name, query.selectors, false);
}

std::optional<std::optional<PidList>> HostTargets::resolve_here(
    TargetScope scope, const std::string& service, const std::vector<Selector>& selectors) const {
  return resolve(scope, service, selectors, true);
}

std::optional<std::optional<PidList>> HostTargets::resolve(TargetScope scope,
                                                           const std::string& service,
                                                           const std::vector<Selector>& given,
                                                           bool here) const {
  static const std::vector<Selector> kWholeService(1);
  // Without selectors a service's scope is all of it; a narrower one picks nothing.
  const auto& selectors = given.empty() && scope == TargetScope::kService ? kWholeService : given;
  const bool whole_hosts = scope == TargetScope::kService || scope == TargetScope::kHost;
  const bool by_host = scope != TargetScope::kService;
  bool picked = false;
  size_t considered = 0;
  PidList pids;
  for (const Selector& selector : selectors) {
    if (here && selector.hostname && *selector.hostname != hostname_) continue;
    ++considered;
    if (selector.service_name && *selector.service_name != service) continue;
    if (scope == TargetScope::kHost && !here && !selector.hostname && !selector.ip_address) {
      continue;
    }
    if (!host_matches(selector, by_host, here)) continue;
    if (whole_hosts) return std::optional<PidList>();
    for (size_t index : *candidates(selector)) {
      if (!process_matches(selector, processes_[index])) continue;
      picked = true;
      pids.push_back(processes_[index].pid);
    }
  }
  // Every selector named other hosts: on this one the subscription has none, and a service's
  // scope without selectors is all of it.
  if (here && considered == 0 && scope == TargetScope::kService) return std::optional<PidList>();
  if (!picked) return std::nullopt;
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return std::optional<PidList>(std::move(pids));
}

}  // namespace dormant::server::storage
