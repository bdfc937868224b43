// Performance Studio's profiling status views, computed from a WorkloadSnapshot:
//   GET /api/metrics/profiling/host_status      one row per active host (snake_case);
//   GET /api/metrics/profiling/workload_status  rows of one scope (service, namespace, host, pod,
//       container, process), with tabCounts, activeHosts and totalCount (camelCase).
// Filters as Studio's: service_name (a substring, or equal with exact_match=true), hostname,
// ip_address, namespace, pod_name, container_name, workload_name and process_name (substrings,
// any case), profiling_status and command_type (equal, any case), pids; a parameter may repeat
// (any of its values), different parameters all hold. They apply to the tab counts too.
//
// Where Studio's counts are loose, ours are exact: a row's processCount counts each process of
// each host once (Studio: distinct (pid, name) pairs across hosts), and a one-shot start whose
// duration has run out is "stopped", not "active".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/records.h"
#include "server/storage/workload_rows.h"

namespace dormant::server::api {

struct StatusFilters {
  std::vector<std::string> services;
  bool exact_match = false;
  std::vector<std::string> hostnames;
  std::vector<std::string> ip_addresses;
  std::vector<std::string> namespaces;
  std::vector<std::string> pod_names;
  std::vector<std::string> container_names;
  std::vector<std::string> workload_names;
  std::vector<std::string> process_names;
  std::vector<std::string> profiling_statuses;
  std::vector<std::string> command_types;
  std::vector<int64_t> pids;

  // Whether a filter looks at processes: the snapshot then needs all of them.
  bool on_processes() const { return !process_names.empty() || !pids.empty(); }
};

using Query = std::vector<std::pair<std::string, std::string>>;
Result<StatusFilters> parse_status_filters(const Query& query);

// The scopes that have rows (workload has none, as in Studio).
Result<storage::TargetScope> parse_status_scope(std::string_view text);
// Whether rows of `scope` list processes or their pids.
bool scope_needs_processes(storage::TargetScope scope);

struct Page {
  int64_t number = 0;  // from 0
  int64_t size = 1000;
};

nlohmann::json workload_status(const storage::WorkloadSnapshot& snapshot,
                               storage::TargetScope scope, const StatusFilters& filters,
                               const Page& page, storage::TimePoint now);

// total_count: the hosts of the matching services, active or not.
nlohmann::json host_status(const storage::WorkloadSnapshot& snapshot, const StatusFilters& filters);

}  // namespace dormant::server::api
