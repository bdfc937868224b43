// What runs where on this host: every container that holds a process, with its pod, workload and
// processes, as the heartbeat reports it, and last the processes outside containers as an entry
// without container (empty id and name: is_host_entry).
//
// One scan takes a census of the host's processes (process_census.h: which container each is
// in, read again only now and then) and reads each new container's files once (ContainerNames
// keeps what it read). It is bounded: at most `max_processes` processes, `max_containers`
// containers and `max_wire_bytes` of JSON are listed, and what is left out is counted.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

#include "common/result.h"
#include "inventory/container_metadata.h"
#include "inventory/process_census.h"
#include "inventory/workload_identity.h"

namespace dormant::inventory {

struct InventoryContainer {
  ContainerMetadata container;
  Workload workload;
  std::vector<InventoryProcess> processes;  // by pid
};

// The entry of the processes outside containers.
bool is_host_entry(const InventoryContainer& entry);

struct HostInventory {
  // By namespace, pod, container name, then id; the host's own entry last.
  std::vector<InventoryContainer> containers;
  size_t processes = 0;   // listed, in containers and outside
  size_t wire_bytes = 0;  // of the entries listed, as wire_bytes() counts
  size_t containers_left_out = 0;
  size_t processes_left_out = 0;
  size_t files_read = 0;  // of /proc, by the census

  bool cut() const { return containers_left_out > 0 || processes_left_out > 0; }
};

struct InventoryLimits {
  size_t max_containers = 1000;
  size_t max_processes = 10000;
  // What the list may take as JSON, at most (wire_bytes): the heartbeat must stay well within
  // what a server takes of one (ours: 1 MiB).
  size_t max_wire_bytes = 512 << 10;
};

// An upper bound of what one container, or one of its processes, takes in a heartbeat's JSON.
size_t wire_bytes(const InventoryContainer& container);
size_t wire_bytes(const InventoryProcess& process);

class InventoryScanner {
 public:
  // `proc_root` and `roots` are /proc and the runtimes' state, or fake trees in tests.
  explicit InventoryScanner(std::filesystem::path proc_root = "/proc", ContainerRoots roots = {},
                            WorkloadLabelKeys keys = {}, InventoryLimits limits = {});

  // An error only when `proc_root` cannot be listed; a process that exits meanwhile, or whose
  // files cannot be read, is skipped. `files_read` counts the /proc files the census read.
  Result<HostInventory> scan();

 private:
  ProcessCensus census_;
  ContainerNames names_;
  WorkloadLabelKeys keys_;
  InventoryLimits limits_;
};

}  // namespace dormant::inventory
