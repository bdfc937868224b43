#include "agent/heartbeat_inventory.h"

#include <cstdlib>
#include <exception>
#include <utility>

#include <malloc.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/json_text.h"

namespace dormant::agent {
namespace {

std::optional<std::string> non_empty(const char* value) {
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

std::vector<wire::ReportedContainer> heartbeat_containers(const inventory::HostInventory& inventory,
                                                          bool with_host_entry) {
  std::vector<wire::ReportedContainer> containers;
  containers.reserve(inventory.containers.size());
  for (const inventory::InventoryContainer& entry : inventory.containers) {
    if (!with_host_entry && inventory::is_host_entry(entry)) continue;
    const inventory::ContainerMetadata& container = entry.container;
    wire::ReportedContainer& reported = containers.emplace_back();
    reported.container_id = container.id;
    reported.container_name = container.name;
    if (!container.runtime.empty()) reported.runtime = container.runtime;
    reported.pod_namespace = container.pod_namespace;
    reported.pod_name = container.pod_name;
    reported.workload_name = entry.workload.name;
    reported.workload_kind = entry.workload.kind;
    reported.processes.reserve(entry.processes.size());
    for (const inventory::InventoryProcess& process : entry.processes) {
      reported.processes.push_back({process.pid, process.name});
    }
  }
  return containers;
}

AgentPlacement agent_placement(const EnvironmentLookup& getenv, const FileExists& exists) {
  AgentPlacement placement;
  placement.pod_namespace = non_empty(getenv("POD_NAMESPACE"));
  placement.pod_name = non_empty(getenv("POD_NAME"));
  if (non_empty(getenv("GPROFILER_IN_K8S")) || non_empty(getenv("KUBERNETES_SERVICE_HOST"))) {
    placement.run_mode = "k8s";
  } else if (non_empty(getenv("GPROFILER_IN_CONTAINER")) || non_empty(getenv("container")) ||
             exists("/.dockerenv") || exists("/run/.containerenv")) {
    placement.run_mode = "container";
  } else {
    placement.run_mode = "standalone_executable";
  }
  return placement;
}

AgentPlacement agent_placement() {
  return agent_placement([](const char* name) { return std::getenv(name); },
                         [](const char* path) { return ::access(path, F_OK) == 0; });
}

HeartbeatInventory::HeartbeatInventory(Scan scan, std::chrono::milliseconds interval)
    : scan_(std::move(scan)), interval_(interval) {}

HeartbeatInventory::Containers HeartbeatInventory::containers(SteadyClock::time_point now) {
  static const auto kNone = std::make_shared<const std::string>("[]");
  if (interval_.count() <= 0) return {kNone, std::nullopt};
  if (!read_at_ || now - *read_at_ >= interval_) {
    refresh(now);
    ::malloc_trim(0);  // what the reading took, several times the list, goes back now
  }
  offered_hash_ = text_hash_;
  ++(digest_ ? sent_by_digest_ : sent_in_full_);
  return {text_ ? text_ : kNone, digest_};
}

void HeartbeatInventory::answered(const std::optional<std::string>& digest) {
  digest_ = offered_hash_ == text_hash_ ? digest : std::nullopt;
  if (digest && !server_of_ours_) {
    server_of_ours_ = true;
    read_at_.reset();  // the list with the host's entry, at the next heartbeat
  }
}

void HeartbeatInventory::refresh(SteadyClock::time_point now) {
  read_at_ = now;
  ++readings_;
  auto started = SteadyClock::now();
  // The scan allocates as it goes: a host with more than it can hold fails this reading only.
  Result<inventory::HostInventory> reading = [&]() -> Result<inventory::HostInventory> {
    try {
      return scan_();
    } catch (const std::exception& e) {
      return Error(ErrorKind::kUnavailable, e.what());
    }
  }();
  last_reading_us_ =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started).count();
  if (!reading) {
    ++failures_;
    if (!failing_) {
      spdlog::warn(
          "inventory: cannot read the host's containers ({}); heartbeats go without "
          "them until a reading succeeds",
          reading.error().message());
    }
    failing_ = true;
    text_.reset();  // "[]" goes in its place, a list of its own
    text_hash_ = {};
    digest_.reset();
    containers_ = processes_ = containers_left_out_ = processes_left_out_ = 0;
    return;
  }
  if (failing_) spdlog::info("inventory: the host's containers are read again");
  failing_ = false;
  bool was_cut = containers_left_out_ > 0 || processes_left_out_ > 0;
  containers_ = reading->containers.size();
  processes_ = reading->processes;
  containers_left_out_ = reading->containers_left_out;
  processes_left_out_ = reading->processes_left_out;
  last_reading_files_ = reading->files_read;
  text_.reset();  // before the next is made: one at a time in memory
  text_ = std::make_shared<const std::string>(
      json_text(wire::to_json(heartbeat_containers(*reading, server_of_ours_))));
  Hash hash{};
  static_assert(hash.size() == SHA256_DIGEST_LENGTH);
  SHA256(reinterpret_cast<const unsigned char*>(text_->data()), text_->size(), hash.data());
  if (hash != text_hash_) {
    text_hash_ = hash;
    digest_.reset();
  }
  if (reading->cut() && !was_cut) {
    spdlog::warn(
        "inventory: {} containers and {} processes listed; {} containers and {} "
        "processes left out past the caps",
        containers_, processes_, containers_left_out_, processes_left_out_);
  }
}

nlohmann::json HeartbeatInventory::health() const {
  if (interval_.count() <= 0) return nullptr;
  return {{"containers", containers_},
          {"processes", processes_},
          {"containers_left_out", containers_left_out_},
          {"processes_left_out", processes_left_out_},
          {"readings", readings_},
          {"failed_readings", failures_},
          {"last_reading_us", last_reading_us_},
          {"last_reading_files", last_reading_files_},
          {"heartbeats_with_list", sent_in_full_},
          {"heartbeats_with_digest", sent_by_digest_}};
}

}  // namespace dormant::agent
