// What Performance Studio's web UI shows besides flamegraphs, as the store keeps it: each upload's
// CPU, memory and cores summed by host and time slot; the hosts of each service; the filters and
// snapshots its users save.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dormant::server::storage {

// The uploads of `service` that start in [from_ms, to_ms), in slots of `slot_ms` from from_ms.
struct UploadMetricsQuery {
  std::string service;
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  int64_t slot_ms = 0;
};

// One host's uploads in one slot, summed. CPU and memory are percentages, as agents measure them;
// uploads without them are not in their counts.
struct HostSlotMetrics {
  int64_t slot_ms = 0;  // the slot's start
  std::string hostname;
  std::string instance_type;
  int64_t uploads = 0;
  int64_t cpu_values = 0;
  double cpu_sum = 0;
  double cpu_max = 0;
  int64_t memory_values = 0;
  double memory_sum = 0;
  double memory_max = 0;
  int64_t profiled_ms = 0;  // the uploads' durations, summed
  int64_t first_start_ms = 0;
  int64_t last_end_ms = 0;
  int64_t processors = 0;  // the most an upload gave
};

// A host as the heartbeats know it.
struct ServiceHost {
  std::string service;
  std::string hostname;
  int64_t first_seen_ms = 0;
  int64_t last_seen_ms = 0;
  std::optional<std::string> agent_version;
  int64_t processors = 0;  // from its latest upload; 0: none gave them
  bool has_containers = false;
  bool has_pods = false;  // containers of Kubernetes pods
};

// A service's first and last profile time that its kept rollups hold.
struct ServiceDataSpan {
  std::string service;
  int64_t first_ms = 0;
  int64_t last_ms = 0;
};

// A filter saved from the UI's filter panel: its {"$and"|"$or": [...]} as JSON text.
struct SavedFilter {
  int64_t id = 0;
  std::string service;
  std::string filter;
};

// A snapshot of the UI's flamegraph: its marked frames, the range and the filter they were
// marked on (JSON texts, as the UI sent them).
struct Snapshot {
  int64_t id = 0;
  std::string service;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string frames;
  std::optional<std::string> filter;
};

}  // namespace dormant::server::storage
