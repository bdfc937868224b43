#include "inventory/host_inventory.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "proc_cgroup_text.h"

#include "inventory/workload_identity.h"

namespace dormant::inventory {
namespace {

namespace fs = std::filesystem;

std::string id_of(char digit) { return std::string(64, digit); }

using testing::on_hybrid;
using testing::on_v1;
using testing::on_v2;

// A fake host: /proc with the cgroup, comm and stat of each process, and the runtimes' state.
class HostInventoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "host-inventory-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "proc");
  }
  void TearDown() override { fs::remove_all(root_); }

  ContainerRoots roots() const {
    return {.docker = root_ / "docker",
            .containerd_tasks = {root_ / "containerd"},
            .storage = {root_ / "storage"}};
  }
  InventoryScanner scanner(InventoryLimits limits = {}, WorkloadLabelKeys keys = {}) const {
    return InventoryScanner(root_ / "proc", roots(), std::move(keys), limits);
  }

  void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  // `parent`: 2 for a kernel thread (kthreadd's child).
  void process(int pid, const std::string& comm, const std::string& cgroup_text, int parent = 1) {
    write(root_ / "proc" / std::to_string(pid) / "cgroup", cgroup_text);
    write(root_ / "proc" / std::to_string(pid) / "comm", comm + "\n");
    write(root_ / "proc" / std::to_string(pid) / "stat",
          std::to_string(pid) + " (" + comm + ") S " + std::to_string(parent) +
              " 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 100 1000 10\n");
  }
  void containerd_bundle(const std::string& id, const std::string& ns, const std::string& pod,
                         const std::string& container) {
    write(root_ / "containerd" / "k8s.io" / id / "config.json",
          R"({"annotations":{"io.kubernetes.cri.container-type":"container",
              "io.kubernetes.cri.container-name":")" +
              container + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
              R"(","io.kubernetes.cri.sandbox-namespace":")" + ns + R"("}})");
  }
  void crio_bundle(const std::string& id, const std::string& annotations) {
    write(root_ / "storage" / "overlay-containers" / id / "userdata" / "config.json",
          R"({"annotations":{)" + annotations + "}}");
  }
  void docker_config(const std::string& id, const std::string& labels, const std::string& name) {
    write(root_ / "docker" / "containers" / id / "config.v2.json",
          R"({"Name":"/)" + name + R"(","Config":{"Labels":{)" + labels + "}}}");
  }

  fs::path root_;
};

std::vector<pid_t> pids_of(const InventoryContainer& container) {
  std::vector<pid_t> pids;
  for (const auto& process : container.processes) pids.push_back(process.pid);
  return pids;
}

TEST_F(HostInventoryTest, ContainerdPodOnCgroupV2) {
  std::string id = id_of('a');
  std::string scope =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
      "cri-containerd-" +
      id + ".scope";
  process(300, "java", on_v2(scope));
  process(301, "jcmd", on_v2(scope + "/child"));
  containerd_bundle(id, "shop", "checkout-7f8d9cb4d-x2m9q", "app");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok()) << inventory.error().message();
  ASSERT_EQ(inventory->containers.size(), 1u);
  const InventoryContainer& entry = inventory->containers[0];
  EXPECT_EQ(entry.container.id, id);
  EXPECT_EQ(entry.container.runtime, "containerd");
  EXPECT_EQ(entry.container.name, "app");
  EXPECT_EQ(entry.container.pod_namespace, "shop");
  EXPECT_EQ(entry.container.pod_name, "checkout-7f8d9cb4d-x2m9q");
  EXPECT_EQ(entry.workload, (Workload{"checkout", "Deployment"}));
  EXPECT_EQ(entry.processes, (std::vector<InventoryProcess>{{300, "java"}, {301, "jcmd"}}));
  EXPECT_EQ(inventory->processes, 2u);
  EXPECT_FALSE(inventory->cut());
}

TEST_F(HostInventoryTest, CrioPodOnCgroupV1TakesThePodsLabelsFirst) {
  std::string id = id_of('b');
  std::string sandbox = id_of('c');
  process(410, "python3",
          on_v1("/kubepods/burstable/pod2d0f6c0e-5b1a-4c3e-9a7d-1f2e3d4c5b6a/crio-" + id));
  crio_bundle(id, R"("io.kubernetes.container.name":"worker",
      "io.kubernetes.pod.name":"ledger-0","io.kubernetes.pod.namespace":"payments",
      "io.kubernetes.cri-o.SandboxID":")" +
                      sandbox + R"(",
      "io.kubernetes.cri-o.Labels":"{\"app\":\"from-container\"}")");
  crio_bundle(sandbox, R"("io.kubernetes.cri-o.Labels":
      "{\"app\":\"none\",\"app.kubernetes.io/instance\":\"ledger-primary\"}")");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 1u);
  const InventoryContainer& entry = inventory->containers[0];
  EXPECT_EQ(entry.container.runtime, "cri-o");
  EXPECT_EQ(entry.container.name, "worker");
  EXPECT_EQ(entry.container.pod_labels.at("app.kubernetes.io/instance"), "ledger-primary");
  // The pod's "app" is a placeholder; its app.kubernetes.io/instance comes before the
  // container's "app"; the kind is the pod name's.
  EXPECT_EQ(entry.workload, (Workload{"ledger-primary", "StatefulSet"}));
  EXPECT_EQ(pids_of(entry), std::vector<pid_t>{410});
}

TEST_F(HostInventoryTest, DockerPodOnAHybridHostWithItsSandboxsLabels) {
  std::string id = id_of('d');
  std::string sandbox = id_of('e');
  process(520, "nginx", on_hybrid("/kubepods/besteffort/pod1/" + id));
  process(521, "pause", on_hybrid("/kubepods/besteffort/pod1/" + sandbox));
  docker_config(id,
                R"("io.kubernetes.container.name":"web","io.kubernetes.pod.name":"front-abcde",
      "io.kubernetes.pod.namespace":"edge","io.kubernetes.sandbox.id":")" +
                    sandbox + R"(")",
                "k8s_web_front");
  docker_config(sandbox, R"("io.kubernetes.docker.type":"podsandbox",
      "io.kubernetes.pod.name":"front-abcde","io.kubernetes.pod.namespace":"edge",
      "app.kubernetes.io/name":"frontend")",
                "k8s_POD_front");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 2u);
  // Sorted by namespace, pod, then container name: "POD" before "web".
  EXPECT_EQ(inventory->containers[0].container.name, "POD");
  EXPECT_EQ(pids_of(inventory->containers[0]), std::vector<pid_t>{521});
  const InventoryContainer& web = inventory->containers[1];
  EXPECT_EQ(web.container.runtime, "docker");
  EXPECT_EQ(web.container.name, "web");
  EXPECT_EQ(web.container.pod_name, "front-abcde");
  // "abcde" has vowels: no DaemonSet suffix, but the sandbox's label names the workload.
  EXPECT_EQ(web.workload, (Workload{"frontend", "k8s"}));
}

TEST_F(HostInventoryTest, PodmanContainerOutsideKubernetes) {
  std::string id = id_of('f');
  process(600, "redis-server", on_v2("/machine.slice/libpod-" + id + ".scope/container"));
  write(root_ / "storage" / "overlay-containers" / "containers.json",
        R"([{"id":")" + id + R"(","names":["cache"]}])");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 1u);
  const InventoryContainer& entry = inventory->containers[0];
  EXPECT_EQ(entry.container.runtime, "podman");
  EXPECT_EQ(entry.container.name, "cache");
  EXPECT_FALSE(entry.container.pod_name);
  EXPECT_EQ(entry.workload, (Workload{std::nullopt, "container"}));
}

// No container on the host, no runtime state: an empty list, not an error.
// Issue 43: on a host without containers the inventory was empty, and no process could be
// targeted. Processes outside containers are the host's own entry, last; kernel threads are not.
TEST_F(HostInventoryTest, ProcessesOutsideContainersAreTheHostsEntryKernelThreadsAreNot) {
  process(1, "systemd", on_v2("/init.scope"), 0);
  process(2, "kthreadd", on_v2("/"), 0);
  process(3, "kworker/0:0", on_v2("/"), 2);
  process(700, "sshd", on_v1("/system.slice/ssh.service"));
  process(701, "odd) (name", on_v2("/user.slice"));
  std::string id = id_of('7');
  process(900, "app", on_v2("/docker/" + id));
  fs::create_directories(root_ / "proc" / "self");
  fs::create_directories(root_ / "proc" / "sys");
  write(root_ / "proc" / "uptime", "1.0 1.0\n");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 2u);
  EXPECT_FALSE(is_host_entry(inventory->containers[0]));
  const InventoryContainer& host = inventory->containers[1];
  EXPECT_TRUE(is_host_entry(host));
  EXPECT_EQ(host.processes,
            (std::vector<InventoryProcess>{{1, "systemd"}, {700, "sshd"}, {701, "odd) (name"}}));
  EXPECT_EQ(inventory->processes, 4u);
}

// The host's own processes take what the wire budget leaves: as many as fit, the rest counted.
TEST_F(HostInventoryTest, TheHostsOwnProcessesAreBoundedByTheWireBudget) {
  for (int pid = 100; pid < 400; ++pid) process(pid, "worker", on_v2("/system.slice/w.service"));
  InventoryLimits limits;
  limits.max_wire_bytes = 4096;
  auto inventory = scanner(limits).scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 1u);
  size_t kept = inventory->containers[0].processes.size();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, 300u);
  EXPECT_LE(inventory->wire_bytes, limits.max_wire_bytes);
  EXPECT_EQ(wire_bytes(inventory->containers[0]), inventory->wire_bytes);
  EXPECT_EQ(inventory->processes, kept);
  EXPECT_EQ(inventory->processes_left_out, 300u - kept);
  // Containers' processes come first in max_processes, whatever their pids.
  std::string id = id_of('8');
  for (int pid = 500; pid < 505; ++pid) process(pid, "app", on_v2("/docker/" + id));
  limits.max_processes = 10;
  auto counted = scanner(limits).scan();
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(counted->processes, 10u);
  EXPECT_EQ(counted->processes_left_out, 295u);
  ASSERT_EQ(counted->containers.size(), 2u);
  EXPECT_EQ(counted->containers[0].processes.size(), 5u);
  EXPECT_EQ(counted->containers[1].processes.size(), 5u);
}

// A host's short-lived processes would change the list at every reading: one outside containers
// is listed once it has outlived a census.
TEST_F(HostInventoryTest, AHostProcessIsListedOnceItOutlivesACensus) {
  process(100, "sshd", on_v2("/system.slice/ssh.service"));
  InventoryScanner scanner = this->scanner();
  ASSERT_TRUE(scanner.scan().ok());
  process(200, "cron-job", on_v2("/system.slice/cron.service"));
  auto second = scanner.scan();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->containers.size(), 1u);
  EXPECT_EQ(second->containers[0].processes, (std::vector<InventoryProcess>{{100, "sshd"}}));
  auto third = scanner.scan();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->containers[0].processes,
            (std::vector<InventoryProcess>{{100, "sshd"}, {200, "cron-job"}}));
}

TEST_F(HostInventoryTest, PartialMetadata) {
  // No runtime file at all: the short id, the runtime the cgroup tells, no pod.
  std::string bare = id_of('1');
  process(800, "app", on_v2("/system.slice/docker-" + bare + ".scope"));
  // A Kubernetes bundle that names the container but not its pod.
  std::string nameless_pod = id_of('2');
  process(801, "sidecar", on_v2("/system.slice/cri-containerd-" + nameless_pod + ".scope"));
  write(root_ / "containerd" / "k8s.io" / nameless_pod / "config.json",
        R"({"annotations":{"io.kubernetes.cri.container-name":"sidecar"}})");
  // A process that exited between the listing and the reading.
  fs::create_directories(root_ / "proc" / "802");

  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 2u);
  const InventoryContainer& first = inventory->containers[0];
  const InventoryContainer& second = inventory->containers[1];
  EXPECT_EQ(first.container.id, bare);
  EXPECT_EQ(first.container.name, bare.substr(0, 12));
  EXPECT_EQ(first.container.runtime, "docker");
  EXPECT_EQ(first.workload, (Workload{std::nullopt, "container"}));
  EXPECT_EQ(second.container.id, nameless_pod);
  EXPECT_EQ(second.container.runtime, "containerd");
  EXPECT_EQ(second.container.name, nameless_pod.substr(0, 12));
  EXPECT_FALSE(second.container.pod_namespace);
}

TEST_F(HostInventoryTest, NamesThatAreNotPrintableAreMasked) {
  std::string id = id_of('3');
  process(900, std::string("ev\x01l\xff", 5), on_v2("/docker/" + id));
  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  ASSERT_EQ(inventory->containers.size(), 1u);
  EXPECT_EQ(inventory->containers[0].processes.at(0).name, "ev?l?");
}

TEST_F(HostInventoryTest, ListsAreCappedAndWhatIsLeftOutCounted) {
  for (int c = 0; c < 4; ++c) {
    std::string id = id_of(static_cast<char>('a' + c));
    for (int p = 0; p < 3; ++p) process(1000 + 10 * c + p, "w", on_v2("/docker/" + id));
  }
  auto by_processes = scanner({.max_containers = 100, .max_processes = 5}).scan();
  ASSERT_TRUE(by_processes.ok());
  EXPECT_EQ(by_processes->processes, 5u);
  EXPECT_EQ(by_processes->processes_left_out, 7u);
  EXPECT_TRUE(by_processes->cut());

  auto by_containers = scanner({.max_containers = 3, .max_processes = 100}).scan();
  ASSERT_TRUE(by_containers.ok());
  EXPECT_EQ(by_containers->containers.size(), 3u);
  EXPECT_EQ(by_containers->containers_left_out, 1u);
  EXPECT_EQ(by_containers->processes, 9u);
  EXPECT_EQ(by_containers->processes_left_out, 3u);

  size_t one = wire_bytes(by_containers->containers[0]);
  auto by_bytes = scanner({.max_wire_bytes = 2 * one + one / 2}).scan();
  ASSERT_TRUE(by_bytes.ok());
  EXPECT_EQ(by_bytes->containers.size(), 2u);
  EXPECT_EQ(by_bytes->containers_left_out, 2u);
  EXPECT_EQ(by_bytes->processes_left_out, 6u);
  EXPECT_LE(by_bytes->wire_bytes, 2 * one + one / 2);
}

TEST_F(HostInventoryTest, HostileFilesAreBounded) {
  std::string id = id_of('4');
  process(1100, "big", on_v2("/docker/" + id) + std::string(1 << 20, 'x'));
  process(1101, std::string(1 << 20, 'n'), on_v2("/docker/" + id));
  auto inventory = scanner().scan();
  ASSERT_TRUE(inventory.ok());
  EXPECT_TRUE(inventory->containers.empty());
}

// A census reads a process at its first two censuses, then at every tenth: what a process does
// between two readings shows within ten censuses, and an exited one leaves at once.
TEST_F(HostInventoryTest, ACensusReadsEachProcessAgainAtEveryTenthCensus) {
  std::string id = id_of('5');
  for (int pid = 2000; pid < 2010; ++pid) process(pid, "app", on_v2("/docker/" + id));
  for (int pid = 3000; pid < 3010; ++pid) process(pid, "sshd", on_v2("/system.slice/ssh.service"));
  InventoryScanner scanner = this->scanner();

  auto first = scanner.scan();
  ASSERT_TRUE(first.ok());
  // Two files of each: its cgroup, and the comm of one in a container or the stat of another.
  EXPECT_EQ(first->files_read, 20u * 2);
  // What the first census found is read again only when its turn comes.
  auto second = scanner.scan();
  ASSERT_TRUE(second.ok());
  EXPECT_LE(second->files_read, 4u);

  // Renamed (as exec does), and one exited: the exit shows at the next census, the name when
  // that process's turn comes.
  process(2003, "java", on_v2("/docker/" + id));
  fs::remove_all(root_ / "proc" / "2009");
  std::vector<size_t> files_read;
  std::optional<size_t> renamed_at;
  for (int census = 3; census <= 12; ++census) {
    auto reading = scanner.scan();
    ASSERT_TRUE(reading.ok());
    ASSERT_EQ(reading->containers.size(), 2u);  // and the host's own
    const auto& processes = reading->containers[0].processes;
    ASSERT_EQ(processes.size(), 9u);
    files_read.push_back(reading->files_read);
    if (!renamed_at && processes[3].name == "java") renamed_at = census;
  }
  ASSERT_TRUE(renamed_at);
  // Each of the 19 left is read once in those ten censuses, two files each.
  size_t total = 0;
  for (size_t files : files_read) total += files;
  EXPECT_EQ(total, 19u * 2);
  for (size_t files : files_read) EXPECT_LE(files, 4u);
}

// A process caught before its runtime moved it into its container shows in it at the next census.
TEST_F(HostInventoryTest, ANewProcessIsReadAgainAtTheCensusAfterItsFirst) {
  std::string id = id_of('6');
  InventoryScanner scanner = this->scanner();
  ASSERT_TRUE(scanner.scan().ok());  // the first census, on an empty host
  process(4000, "runc:[2:INIT]", on_v2("/system.slice/containerd.service"));
  auto first = scanner.scan();
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->containers.empty()) << "outside containers, listed once it outlives a census";

  process(4000, "nginx", on_v2("/system.slice/docker-" + id + ".scope"));
  auto second = scanner.scan();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->containers.size(), 1u);
  EXPECT_EQ(second->containers[0].processes, (std::vector<InventoryProcess>{{4000, "nginx"}}));
}

TEST_F(HostInventoryTest, AProcRootThatCannotBeListedIsAnError) {
  InventoryScanner missing(root_ / "nowhere", roots());
  auto inventory = missing.scan();
  ASSERT_FALSE(inventory.ok());
  EXPECT_NE(inventory.error().message().find("nowhere"), std::string::npos);
}

// The kind from the pod name's shape.
TEST(SplitPodName, ControllerSuffixes) {
  auto expect = [](std::string_view pod, std::string workload, std::optional<std::string> kind) {
    PodNameParts parts = split_pod_name(pod);
    EXPECT_EQ(parts.workload, workload) << pod;
    EXPECT_EQ(parts.kind, kind) << pod;
  };
  expect("checkout-7f8d9cb4d-x2m9q", "checkout", "Deployment");
  expect("api-gateway-5d4b8c7f9b-zq7wt", "api-gateway", "Deployment");
  expect("web-0", "web", "StatefulSet");
  expect("kafka-broker-12", "kafka-broker", "StatefulSet");
  expect("node-exporter-x7k2p", "node-exporter", "DaemonSet");
  expect("gprofiler-abcde", "gprofiler-abcde", std::nullopt);  // vowels: no random suffix
  expect("db-redis", "db-redis", std::nullopt);
  expect("solo", "solo", std::nullopt);
  expect("-0", "-0", std::nullopt);
}

TEST(WorkloadOf, ConfiguredLabelsThenStandardOnesThenThePodName) {
  ContainerMetadata container;
  container.pod_namespace = "ns";
  container.pod_name = "search-6b7c9d8f4-k2l9m";
  container.container_labels = {{"team-app", "indexer"}, {"k8s-app", "search-k8s"}};
  EXPECT_EQ(workload_of(container), (Workload{"search-k8s", "Deployment"}));
  EXPECT_EQ(workload_of(container, {.name = {"team-app"}, .kind = {}}),
            (Workload{"indexer", "Deployment"}));
  container.container_labels = {{"app", "Unknown"}, {"team-kind", "Rollout"}};
  EXPECT_EQ(workload_of(container, {.name = {}, .kind = {"team-kind"}}),
            (Workload{"search", "Rollout"}));
  container.pod_name = std::nullopt;
  container.pod_namespace = std::nullopt;
  EXPECT_EQ(workload_of(container), (Workload{std::nullopt, "container"}));
}

// A placeholder is no name; the next source is tried.
TEST(WorkloadOf, PlaceholderLabelsAreSkipped) {
  ContainerMetadata container;
  container.pod_namespace = "ns";
  container.pod_name = "billing-api-0";
  for (std::string placeholder : {"", "unknown", "none", "NONE"}) {
    container.pod_labels = {{"app.kubernetes.io/name", placeholder}, {"app", placeholder}};
    container.container_labels = {{"k8s-app", "billing"}};
    EXPECT_EQ(workload_of(container), (Workload{"billing", "StatefulSet"})) << placeholder;
    container.container_labels = {{"k8s-app", placeholder}};
    EXPECT_EQ(workload_of(container), (Workload{"billing-api", "StatefulSet"})) << placeholder;
  }
}

// A pod whose name has no controller's shape is of kind "k8s".
TEST(WorkloadOf, AnUnrecognizedPodNameIsOfKindK8s) {
  ContainerMetadata container;
  container.pod_namespace = "ns";
  container.pod_name = "db-redis";
  EXPECT_EQ(workload_of(container), (Workload{"db-redis", "k8s"}));
}

TEST(WorkloadOf, ThePodsLabelWinsOverTheContainers) {
  ContainerMetadata container;
  container.pod_namespace = "ns";
  container.pod_name = "odd";
  container.pod_labels = {{"app", "from-pod"}};
  container.container_labels = {{"app.kubernetes.io/name", "from-container"}};
  EXPECT_EQ(workload_of(container), (Workload{"from-pod", "k8s"}));
}

}  // namespace
}  // namespace dormant::inventory
