// Selectors resolved in memory against one host's inventory, read once: a heartbeat's share of
// its service's subscriptions (up to 1,000 of 100 selectors each) costs a lookup per selector,
// not a query per selector.
//
// It picks what storage::resolve_targets() (target_rows.h) picks on this host, the same way: the
// same members, compared as SQL compares them (a NULL column matches nothing).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "server/storage/records.h"

namespace dormant::server::control {

using storage::PidList;

class SelectorResolver {
 public:
  explicit SelectorResolver(storage::HostInventory inventory);

  // What `query` picks on this host: nullopt for nothing, a nullopt pid list for the whole host
  // (kService and kHost), else its sorted pids.
  std::optional<std::optional<PidList>> resolve(const storage::TargetQuery& query) const;
  // The same for selectors that may only pick this host: those naming another host are left out,
  // the others taken as naming this one (a subscription's, on a heartbeat of this host).
  std::optional<std::optional<PidList>> resolve_here(
      storage::TargetScope scope, const std::string& service,
      const std::vector<storage::Selector>& selectors) const;

 private:
  std::optional<std::optional<PidList>> resolve(storage::TargetScope scope,
                                                const std::string& service,
                                                const std::vector<storage::Selector>& selectors,
                                                bool here) const;
  bool host_matches(const storage::Selector& selector, bool by_host, bool here) const;
  static bool process_matches(const storage::Selector& selector,
                              const storage::InventoryProcess& process);
  // The processes a selector may pick, by its most telling member.
  const std::vector<size_t>* candidates(const storage::Selector& selector) const;

  storage::HostInventory inventory_;
  std::vector<size_t> all_;
  std::unordered_map<pid_t, std::vector<size_t>> by_pid_;
  std::unordered_map<std::string, std::vector<size_t>> by_process_name_;
  std::unordered_map<std::string, std::vector<size_t>> by_container_name_;
};

}  // namespace dormant::server::control
