// Studio's GET /api/metrics/profiling/workload_status: the rows of one scope (service, namespace,
// host, pod, container, process) among the active hosts, with tabCounts, activeHosts and
// totalCount (camelCase), filtered as profiling_status.h says.
//
// Two steps, so that a page costs what it shows and not the fleet's process count:
//   group()   files the snapshot's hosts and containers, and the processes it holds (those of
//             hosts whose command lists pids; all of them when a filter looks at processes), into
//             the scope's groups, and says which containers' processes the page lists but the
//             snapshot lacks;
//   render()  answers, once those processes are in the snapshot.
// Groups sort by their members (service, then hostname, namespace, pod, container name; pid as a
// number); a row's id joins them with '|' as Studio's does.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api/profiling_status.h"
#include "server/storage/records.h"
#include "server/storage/workload_rows.h"

namespace dormant::server::api {

class WorkloadStatusView {
 public:
  WorkloadStatusView(storage::TargetScope scope, StatusFilters filters, Page page,
                     storage::TimePoint now);

  // Indices in snapshot.containers.
  std::vector<size_t> group(const storage::WorkloadSnapshot& snapshot);
  // The same snapshot, with those containers' processes read.
  nlohmann::json render(const storage::WorkloadSnapshot& snapshot) const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;

  // A host without inventory, a container whose processes were not read, or one process: what
  // the filters pass and the groups count.
  struct Unit {
    uint32_t host = 0;
    uint32_t container = kNone;  // in snapshot.containers
    uint32_t process = kNone;    // in its container's processes
    int64_t processes = 0;       // what it adds to a process count
    std::string_view status;
    uint32_t service_id = kNone;  // dense ids of what it belongs to, kNone where it has none
    uint32_t namespace_id = kNone;
    uint32_t pod_id = kNone;
    uint32_t container_id = kNone;
  };
  struct Tabs {
    size_t services = 0, namespaces = 0, hosts = 0, pods = 0, containers = 0, hostnames = 0;
    int64_t processes = 0;
  };

  void collect_units(const storage::WorkloadSnapshot& snapshot);
  std::vector<size_t> group_by_scope(const storage::WorkloadSnapshot& snapshot);
  std::vector<size_t> group_processes();
  nlohmann::json process_rows(const storage::WorkloadSnapshot& snapshot) const;
  nlohmann::json group_rows(const storage::WorkloadSnapshot& snapshot) const;
  std::span<const uint32_t> members_of(uint32_t group) const;

  storage::TargetScope scope_;
  StatusFilters filters_;
  Page page_;
  storage::TimePoint now_;
  std::vector<Unit> units_;  // by host, in the snapshot's order
  Tabs tabs_;
  int64_t total_ = 0;
  // Scopes but process: the units of group g are members_[group_starts_[g], group_starts_[g + 1]);
  // the page's group ids, in order.
  std::vector<uint32_t> group_starts_;
  std::vector<uint32_t> members_;
  std::vector<uint32_t> page_groups_;
  // Process scope: the hosts the page's processes are on, and how many of the first one's go
  // before the page.
  std::vector<uint32_t> page_hosts_;
  int64_t skip_ = 0;
};

}  // namespace dormant::server::api
