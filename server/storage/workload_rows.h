// What the profiling status views read: the active hosts (heard from within a window), each with
// its current command, and their inventories. One read transaction; processes only where asked.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"
#include "server/storage/records.h"

namespace dormant::server::storage {

struct ActiveHost {
  std::string hostname;
  std::string service_name;
  std::string ip_address;
  std::optional<std::string> agent_version;
  std::optional<std::string> run_mode;
  TimePoint last_heartbeat_at;
  int64_t containers = 0;  // in its inventory
  int64_t processes = 0;
  std::optional<Command> command;  // its current command
};

struct ActiveContainer {
  size_t host = 0;       // index in WorkloadSnapshot::hosts
  int64_t position = 0;  // in its host's inventory
  // As listed, but for its id and runtime, which no view shows; processes: only for the hosts
  // whose processes were read.
  HostContainer container;
  int64_t process_count = 0;
};

struct WorkloadSnapshot {
  std::map<std::string, int64_t> hosts_by_service;  // every host, active or not
  std::vector<ActiveHost> hosts;                    // by service, then hostname
  std::vector<ActiveContainer> containers;          // by host, then position
};

struct SnapshotQuery {
  std::chrono::milliseconds active_window{120'000};
  std::optional<std::string> service_name;  // exactly this one; none: every service
  // Every container's processes; else only those of hosts whose current command is a start
  // for some pids (what "profiling" means for each process depends on them).
  bool all_processes = false;
};

// `now` is the server's clock. Hosts without an inventory have no containers.
Result<WorkloadSnapshot> read_workload_snapshot(Database& db, const SnapshotQuery& query,
                                                TimePoint now);

// For each host, the range [first, last) of its containers in snapshot.containers.
std::vector<std::pair<size_t, size_t>> container_ranges(const WorkloadSnapshot& snapshot);

// Reads the processes of `containers` (indices in snapshot.containers), but for those whose
// processes were read already, in a few statements however many. In a later transaction than the
// snapshot's, a container whose host has listed another in its place since gets none.
Result<void> read_processes_of_containers(Database& db, WorkloadSnapshot& snapshot,
                                          const std::vector<size_t>& containers);

}  // namespace dormant::server::storage
