// What a heartbeat says of where the agent runs and what runs beside it (Performance Studio's
// workload fields): run_mode, the agent's own pod (POD_NAMESPACE, POD_NAME), and containers[]
// with their pods, workloads and processes.
//
// The inventory is read at most every --inventory-interval, whatever the heartbeat interval, and
// every heartbeat between two readings sends the last one. A reading that fails is logged once
// (until one succeeds again) and the heartbeat goes with an empty list: the inventory never holds
// a heartbeat back.
//
// A server of ours answers each heartbeat with the digest of the list it holds for the host; while
// the list read is the one it holds, heartbeats carry that digest in its place (a few hundred KiB
// less to write, and for the server to read, on a host with thousands of processes). Any other
// answer, a server that answers none (Studio) or a new list read sends the list again.
//
// The host's own entry (its processes outside containers: an entry with no container) goes only
// to a server of ours, which lists them as the host's: Studio's UI would show it as a container
// without a name. Until a server answers a digest the list goes without it; the first digest has
// the host read again, with it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/deadline.h"
#include "common/result.h"
#include "inventory/host_inventory.h"
#include "wire/protocol.h"

namespace dormant::agent {

// Studio's containers[]. What is not known (runtime, pod, workload) is left out of the JSON.
std::vector<wire::ReportedContainer> heartbeat_containers(const inventory::HostInventory& inventory,
                                                          bool with_host_entry = true);

struct AgentPlacement {
  std::string run_mode;  // "k8s", "container" or "standalone_executable"
  std::optional<std::string> pod_namespace;
  std::optional<std::string> pod_name;
};

// From the environment (a Kubernetes pod's KUBERNETES_SERVICE_HOST, gProfiler's GPROFILER_IN_K8S
// and GPROFILER_IN_CONTAINER, the container= of podman and systemd-nspawn, POD_NAMESPACE and
// POD_NAME of the downward API) and the marker files container runtimes leave (/.dockerenv,
// /run/.containerenv).
using EnvironmentLookup = std::function<const char*(const char*)>;
using FileExists = std::function<bool(const char*)>;
AgentPlacement agent_placement(const EnvironmentLookup& getenv, const FileExists& exists);
AgentPlacement agent_placement();

class HeartbeatInventory {
 public:
  using Scan = std::function<Result<inventory::HostInventory>()>;

  // `interval` zero: no inventory, containers[] stays empty and nothing is read.
  HeartbeatInventory(Scan scan, std::chrono::milliseconds interval);

  struct Containers {
    std::shared_ptr<const std::string> text;  // as JSON text, written once per reading
    std::optional<std::string> digest;        // to send in its place, when the server holds it
  };
  // What the next heartbeat says of the containers, read again first when the interval has
  // passed.
  Containers containers(SteadyClock::time_point now);
  // The answer to the heartbeat that containers() was last called for: its containers_digest.
  void answered(const std::optional<std::string>& digest);

  // For agent_health: the last reading's counts, what it left out, readings and failures.
  nlohmann::json health() const;

 private:
  void refresh(SteadyClock::time_point now);

  Scan scan_;
  std::chrono::milliseconds interval_;
  std::optional<SteadyClock::time_point> read_at_;
  std::shared_ptr<const std::string> text_;  // the last reading's containers[]
  // The readings' lists are told apart by their SHA-256 (all zeros: the "[]" of a failed reading):
  // a reading that finds the list unchanged keeps the server's digest of it.
  using Hash = std::array<unsigned char, 32>;
  Hash text_hash_{};
  std::optional<Hash> offered_hash_;   // what the last heartbeat stood for
  std::optional<std::string> digest_;  // the server's, for text_hash_
  bool server_of_ours_ = false;        // a server answered a digest: the host's entry goes too
  int64_t sent_in_full_ = 0;
  int64_t sent_by_digest_ = 0;
  // The last reading's counts.
  size_t containers_ = 0;
  size_t processes_ = 0;
  size_t containers_left_out_ = 0;
  size_t processes_left_out_ = 0;
  int64_t readings_ = 0;
  int64_t failures_ = 0;
  bool failing_ = false;  // the last reading failed: its error is logged already
  int64_t last_reading_us_ = 0;
  size_t last_reading_files_ = 0;  // of /proc
};

}  // namespace dormant::agent
