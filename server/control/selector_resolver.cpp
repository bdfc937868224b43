#include "server/control/selector_resolver.h"

#include <algorithm>

namespace dormant::server::control {

using storage::Selector;
using storage::TargetScope;
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

SelectorResolver::SelectorResolver(storage::HostInventory inventory)
    : inventory_(std::move(inventory)) {
  for (size_t index = 0; index < inventory_.processes.size(); ++index) {
    const storage::InventoryProcess& process = inventory_.processes[index];
    all_.push_back(index);
    by_pid_[process.pid].push_back(index);
    by_process_name_[process.process_name].push_back(index);
    by_container_name_[process.container_name].push_back(index);
  }
}

bool SelectorResolver::host_matches(const Selector& selector, bool by_host, bool here) const {
  if (!by_host) return true;
  return (here || same(selector.hostname, inventory_.hostname)) &&
         same(selector.ip_address, inventory_.ip_address);
}

bool SelectorResolver::process_matches(const Selector& selector,
                                       const storage::InventoryProcess& process) {
  return same(selector.pod_namespace, process.pod_namespace) &&
         same(selector.workload_name, process.workload_name) &&
         same(selector.workload_kind, process.workload_kind) &&
         same(selector.pod_name, process.pod_name) &&
         same(selector.container_name, process.container_name) &&
         same(selector.process_name, process.process_name) &&
         (!selector.pid || process.pid == *selector.pid);
}

const std::vector<size_t>* SelectorResolver::candidates(const Selector& selector) const {
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

std::optional<std::optional<PidList>> SelectorResolver::resolve(
    const storage::TargetQuery& query) const {
  return resolve(query.scope, query.service_name, query.selectors, false);
}

std::optional<std::optional<PidList>> SelectorResolver::resolve_here(
    TargetScope scope, const std::string& service, const std::vector<Selector>& selectors) const {
  return resolve(scope, service, selectors, true);
}

std::optional<std::optional<PidList>> SelectorResolver::resolve(TargetScope scope,
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
    if (here && selector.hostname && *selector.hostname != inventory_.hostname) continue;
    ++considered;
    if (selector.service_name && *selector.service_name != service) continue;
    if (scope == TargetScope::kHost && !here && !selector.hostname && !selector.ip_address) {
      continue;
    }
    if (!host_matches(selector, by_host, here)) continue;
    if (whole_hosts) return std::optional<PidList>();
    for (size_t index : *candidates(selector)) {
      if (!process_matches(selector, inventory_.processes[index])) continue;
      picked = true;
      pids.push_back(inventory_.processes[index].pid);
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

}  // namespace dormant::server::control
