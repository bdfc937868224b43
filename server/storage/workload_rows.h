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
  std::vector<std::string> perf_supported_events;
  TimePoint last_heartbeat_at;
  int64_t containers = 0;  // in its inventory
  int64_t processes = 0;
  std::optional<Command> command;  // its current command
};

struct ActiveContainer {
  size_t host = 0;          // index in WorkloadSnapshot::hosts
  HostContainer container;  // processes: only for the hosts the query asked them of
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

}  // namespace dormant::server::storage
