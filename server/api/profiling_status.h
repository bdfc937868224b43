// Performance Studio's profiling status views, computed from a WorkloadSnapshot:
//   GET /api/metrics/profiling/host_status      one row per active host (snake_case);
//   GET /api/metrics/profiling/workload_status  rows of one scope (workload_status.h).
// This file: their filters, what a host's command means for the status of its parts, and
// host_status.
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

  // Whether the filters on hosts (service, hostname, address, command type), on containers (none:
  // a host without inventory), on processes (none: a container whose processes were not read)
  // and on the profiling status let one through.
  bool admits_host(const storage::ActiveHost& host) const;
  bool admits_container(const storage::HostContainer* container) const;
  bool admits_process(const storage::HostProcess* process) const;
  bool admits_status(std::string_view status) const;
};

using Query = std::vector<std::pair<std::string, std::string>>;
Result<StatusFilters> parse_status_filters(const Query& query);

// The scopes that have rows (workload has none, as in Studio).
Result<storage::TargetScope> parse_status_scope(std::string_view text);

struct Page {
  int64_t number = 0;  // from 0
  int64_t size = 1000;
};

// "active" for a process (or, without one, a host or container as a whole) that the host's
// command profiles; "stopped" without a command or outside it; else the command's status.
std::string_view profiling_status_of(const storage::ActiveHost& host,
                                     const storage::HostProcess* process,
                                     const storage::HostContainer* container,
                                     storage::TimePoint now);
// The type of the host's current command, "N/A" without one.
std::string_view command_type_of(const storage::ActiveHost& host);
// "Default" without profiler_configs; else the profilers they leave on, by Studio's names.
std::string profiler_summary(const std::optional<storage::Command>& command);

// total_count: the hosts of the matching services, active or not.
nlohmann::json host_status(const storage::WorkloadSnapshot& snapshot, const StatusFilters& filters);

}  // namespace dormant::server::api
