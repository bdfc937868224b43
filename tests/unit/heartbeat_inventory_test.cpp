#include "agent/heartbeat_inventory.h"

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "wire/protocol.h"

namespace dormant::agent {
namespace {

using namespace std::chrono_literals;
using inventory::HostInventory;
using inventory::InventoryContainer;

InventoryContainer pod_container(const std::string& name, std::vector<pid_t> pids) {
  InventoryContainer entry;
  entry.container.id = std::string(64, 'a');
  entry.container.runtime = "containerd";
  entry.container.name = name;
  entry.container.pod_namespace = "shop";
  entry.container.pod_name = "checkout-7f8d9cb4d-x2m9q";
  entry.workload = {"checkout", "Deployment"};
  for (pid_t pid : pids) entry.processes.push_back({pid, "java"});
  return entry;
}

TEST(HeartbeatContainers, StudiosFieldNamesAndNothingForWhatIsUnknown) {
  HostInventory inventory;
  inventory.containers.push_back(pod_container("app", {300, 301}));
  InventoryContainer bare;
  bare.container.id = std::string(64, 'b');
  bare.container.name = "bbbbbbbbbbbb";
  bare.workload.kind = "container";
  inventory.containers.push_back(bare);

  std::vector<wire::ReportedContainer> containers = heartbeat_containers(inventory);
  EXPECT_EQ(wire::to_json(containers), nlohmann::json::parse(R"([
    {"container_id":")" + std::string(64, 'a') +
                                                             R"(","container_name":"app",
     "runtime":"containerd","namespace":"shop","pod_name":"checkout-7f8d9cb4d-x2m9q",
     "workload_name":"checkout","workload_kind":"Deployment",
     "processes":[{"pid":300,"process_name":"java"},{"pid":301,"process_name":"java"}]},
    {"container_id":")" + std::string(64, 'b') +
                                                             R"(","container_name":"bbbbbbbbbbbb",
     "workload_kind":"container","processes":[]}])"));

  // What the server's parser takes.
  wire::HeartbeatRequest request;
  request.ip_address = "10.0.0.1";
  request.hostname = "h";
  request.service_name = "s";
  request.containers = containers;
  auto parsed = wire::parse_heartbeat_request(wire::to_json(request));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->containers, containers);
}

TEST(HeartbeatContainers, WireBytesBoundTheJsonEvenForTheLongestNames) {
  InventoryContainer entry;
  entry.container.id = std::string(64, 'c');
  entry.container.runtime = "containerd";
  entry.container.name = std::string(256, '"');
  entry.container.pod_namespace = std::string(253, '\\');
  entry.container.pod_name = std::string(253, 'p');
  entry.workload = {std::string(253, 'w'), "StatefulSet"};
  for (pid_t pid = 4'194'000; pid < 4'194'100; ++pid) {
    entry.processes.push_back({pid, "\"\\\"\\\"\\\"\\\"\\\"\\\""});
  }
  HostInventory inventory;
  inventory.containers.push_back(entry);
  EXPECT_LE(wire::to_json(heartbeat_containers(inventory)).dump().size(),
            inventory::wire_bytes(entry));
}

// The agent's own pod from POD_NAMESPACE and POD_NAME.
TEST(AgentPlacement, RunModeAndOwnPodFromTheEnvironment) {
  std::map<std::string, std::string> env;
  bool dockerenv = false;
  auto placement = [&] {
    return agent_placement(
        [&](const char* name) -> const char* {
          auto found = env.find(name);
          return found == env.end() ? nullptr : found->second.c_str();
        },
        [&](const char* path) { return dockerenv && std::string(path) == "/.dockerenv"; });
  };
  EXPECT_EQ(placement().run_mode, "standalone_executable");
  EXPECT_FALSE(placement().pod_name);
  dockerenv = true;
  EXPECT_EQ(placement().run_mode, "container");
  env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
  env["POD_NAMESPACE"] = "observability";
  env["POD_NAME"] = "dormant-agent-x7k2p";
  AgentPlacement in_pod = placement();
  EXPECT_EQ(in_pod.run_mode, "k8s");
  EXPECT_EQ(in_pod.pod_namespace, "observability");
  EXPECT_EQ(in_pod.pod_name, "dormant-agent-x7k2p");
  env["POD_NAME"] = "";
  EXPECT_FALSE(placement().pod_name);
}

class HeartbeatInventoryTest : public ::testing::Test {
 protected:
  HeartbeatInventory::Scan counting_scan() {
    return [this]() -> Result<HostInventory> {
      ++scans_;
      if (throws_) throw std::runtime_error("no memory left");
      if (fails_) return Error(ErrorKind::kNotFound, "cannot open /proc");
      HostInventory inventory;
      // A new pid at each reading unless pids_ are given.
      std::vector<pid_t> pids = pids_;
      if (pids.empty()) pids = {static_cast<pid_t>(100 + scans_)};
      inventory.containers.push_back(pod_container("app", pids));
      inventory.processes = pids.size();
      if (host_processes_) {
        inventory.containers.emplace_back().processes.push_back({1, "systemd"});
        ++inventory.processes;
      }
      return inventory;
    };
  }

  int scans_ = 0;
  std::vector<pid_t> pids_;
  bool fails_ = false;
  bool throws_ = false;
  bool host_processes_ = false;  // processes outside containers: the host's own entry
  SteadyClock::time_point t0_{};
};

// The list as sent: JSON text.
nlohmann::json sent(const std::shared_ptr<const std::string>& text) {
  return nlohmann::json::parse(*text);
}

TEST_F(HeartbeatInventoryTest, ReadAndWrittenAtMostOncePerIntervalWhateverTheHeartbeats) {
  HeartbeatInventory inventory(counting_scan(), 30s);
  std::shared_ptr<const std::string> first = inventory.containers(t0_).text;
  for (auto at = 1s; at < 30s; at += 1s) {
    EXPECT_EQ(inventory.containers(t0_ + at).text, first) << "the same text, not written again";
  }
  EXPECT_EQ(scans_, 1);
  std::shared_ptr<const std::string> second = inventory.containers(t0_ + 30s).text;
  EXPECT_EQ(scans_, 2);
  EXPECT_NE(sent(second), sent(first));
  EXPECT_EQ(inventory.health()["readings"], 2);
  EXPECT_EQ(inventory.health()["processes"], 1);
}

TEST_F(HeartbeatInventoryTest, AFailedOrThrowingReadingSendsAnEmptyListAndIsRetriedNextInterval) {
  HeartbeatInventory inventory(counting_scan(), 10s);
  EXPECT_EQ(sent(inventory.containers(t0_).text).size(), 1u);
  fails_ = true;
  EXPECT_EQ(sent(inventory.containers(t0_ + 10s).text), nlohmann::json::array());
  EXPECT_EQ(sent(inventory.containers(t0_ + 11s).text), nlohmann::json::array());
  throws_ = true;
  EXPECT_EQ(sent(inventory.containers(t0_ + 20s).text), nlohmann::json::array());
  EXPECT_EQ(scans_, 3);
  EXPECT_EQ(inventory.health()["failed_readings"], 2);
  EXPECT_EQ(inventory.health()["processes"], 0);
  fails_ = throws_ = false;
  EXPECT_EQ(sent(inventory.containers(t0_ + 30s).text).size(), 1u);
}

// The list goes in full until a server answers its digest; then the digest goes in its place,
// while the readings find the same list and the server keeps confirming it. (The first digest
// has the host read again at once: TheHostsOwnEntryGoesOnlyToAServerOfOurs.)
TEST_F(HeartbeatInventoryTest, TheDigestAServerAnsweredGoesInPlaceOfTheSameList) {
  pids_ = {7};
  HeartbeatInventory inventory(counting_scan(), 30s);
  auto first = inventory.containers(t0_);
  EXPECT_FALSE(first.digest);
  inventory.answered("d1");
  auto second = inventory.containers(t0_ + 1s);
  EXPECT_EQ(second.digest, "d1");
  EXPECT_EQ(*second.text, *first.text);
  inventory.answered("d1");
  // A reading that finds the same list keeps the digest.
  EXPECT_EQ(inventory.containers(t0_ + 31s).digest, "d1");
  EXPECT_EQ(scans_, 3);
  // A server that does not confirm it (restarted empty, another one, Studio): the list again.
  inventory.answered(std::nullopt);
  EXPECT_FALSE(inventory.containers(t0_ + 32s).digest);
  inventory.answered("d1");
  EXPECT_EQ(inventory.containers(t0_ + 33s).digest, "d1");

  // A new list: sent in full, and an answer to a heartbeat that carried the old one is not
  // taken for it.
  pids_ = {7, 8};
  auto changed = inventory.containers(t0_ + 61s);
  EXPECT_FALSE(changed.digest);
  EXPECT_NE(*changed.text, *first.text);
  inventory.answered("d2");
  EXPECT_EQ(inventory.containers(t0_ + 62s).digest, "d2");
  EXPECT_EQ(inventory.health()["heartbeats_with_digest"], 4);
  EXPECT_EQ(inventory.health()["heartbeats_with_list"], 3);

  // A failed reading sends an empty list, whose digest does not stand for the list read after.
  fails_ = true;
  EXPECT_FALSE(inventory.containers(t0_ + 91s).digest);
  inventory.answered("empty");
  EXPECT_EQ(inventory.containers(t0_ + 92s).digest, "empty");
  inventory.answered("empty");
  fails_ = false;
  auto recovered = inventory.containers(t0_ + 121s);
  EXPECT_FALSE(recovered.digest);
  EXPECT_EQ(*recovered.text, *changed.text);
}

// Studio's UI would show the host's own entry as a container without a name: it goes only to a
// server that answers digests (ours), from the reading that follows its first digest.
TEST_F(HeartbeatInventoryTest, TheHostsOwnEntryGoesOnlyToAServerOfOurs) {
  host_processes_ = true;
  pids_ = {7};
  HeartbeatInventory inventory(counting_scan(), 30s);
  EXPECT_EQ(sent(inventory.containers(t0_).text).size(), 1u);
  inventory.answered(std::nullopt);  // Studio
  EXPECT_EQ(sent(inventory.containers(t0_ + 1s).text).size(), 1u);
  EXPECT_EQ(scans_, 1);
  inventory.answered("without");  // ours
  auto with_host = inventory.containers(t0_ + 2s);
  EXPECT_EQ(scans_, 2) << "read again at once";
  EXPECT_FALSE(with_host.digest) << "the digest stood for the list without the host's entry";
  nlohmann::json listed = sent(with_host.text);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[1]["container_id"], "");
  EXPECT_EQ(listed[1]["processes"][0]["pid"], 1);
  inventory.answered("with");
  EXPECT_EQ(inventory.containers(t0_ + 3s).digest, "with");
  EXPECT_EQ(inventory.containers(t0_ + 40s).digest, "with");
  EXPECT_EQ(scans_, 3);
}

TEST_F(HeartbeatInventoryTest, IntervalZeroReadsNothing) {
  HeartbeatInventory inventory(counting_scan(), 0s);
  EXPECT_EQ(sent(inventory.containers(t0_).text), nlohmann::json::array());
  EXPECT_EQ(sent(inventory.containers(t0_ + 1h).text), nlohmann::json::array());
  EXPECT_EQ(scans_, 0);
  EXPECT_TRUE(inventory.health().is_null());
}

// The workload fields are additive. A backend that predates them reads every
// field it knows, with its name and type, and a command for the host as before.
TEST(HeartbeatBodyText, WorkloadFieldsAreAdditive) {
  wire::HeartbeatRequest request;
  request.ip_address = "10.0.0.1";
  request.hostname = "h1";
  request.service_name = "web";
  request.last_command_id = "c-1";
  request.perf_supported_events = {"cpu-clock"};
  wire::HeartbeatRequest enriched = request;
  enriched.run_mode = "k8s";
  enriched.pod_namespace = "observability";
  enriched.pod_name = "dormant-x7k2p";
  enriched.containers_text = std::make_shared<const std::string>(
      R"([{"container_id":"abc","container_name":"app","processes":[{"pid":7,"process_name":"java"}]}])");
  nlohmann::json before = nlohmann::json::parse(wire::heartbeat_body_text(request));
  nlohmann::json after = nlohmann::json::parse(wire::heartbeat_body_text(enriched));
  for (const char* legacy :
       {"ip_address", "hostname", "service_name", "last_command_id", "status",
        "received_command_ids", "executed_command_ids", "perf_supported_events"}) {
    ASSERT_TRUE(after.contains(legacy)) << legacy;
    EXPECT_EQ(after[legacy], before[legacy]) << legacy;
  }
  // What an older backend does with members it does not know: ours kept them in `extra`.
  nlohmann::json known_then = after;
  for (const char* added : {"run_mode", "namespace", "pod_name", "containers", "agent_version"}) {
    known_then.erase(added);
  }
  auto parsed = wire::parse_heartbeat_request(after);
  auto parsed_then = wire::parse_heartbeat_request(known_then);
  ASSERT_TRUE(parsed.ok() && parsed_then.ok());
  EXPECT_EQ(parsed->hostname, parsed_then->hostname);
  EXPECT_EQ(parsed->service_name, parsed_then->service_name);
  EXPECT_EQ(parsed->last_command_id, parsed_then->last_command_id);
  EXPECT_EQ(parsed->ip_address, parsed_then->ip_address);
}

// The body carries the text in place of containers: a server reads the same request.
TEST(HeartbeatBodyText, CarriesTheWrittenContainersInPlaceOfTheList) {
  wire::HeartbeatRequest request;
  request.ip_address = "10.0.0.1";
  request.hostname = "h1";
  request.service_name = "web";
  request.containers = {{.container_name = "ignored"}};
  request.containers_text =
      std::make_shared<const std::string>(R"([{"container_name":"app","processes":[]}])");
  auto parsed =
      wire::parse_heartbeat_request(nlohmann::json::parse(wire::heartbeat_body_text(request)));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(wire::to_json(parsed->containers), nlohmann::json::parse(*request.containers_text));
  EXPECT_EQ(parsed->hostname, "h1");
  request.containers_text.reset();
  EXPECT_EQ(nlohmann::json::parse(wire::heartbeat_body_text(request))["containers"],
            wire::to_json(request.containers));
}

}  // namespace
}  // namespace dormant::agent
