#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc_cgroup_text.h"

#include "inventory/container_metadata.h"

namespace dormant::inventory {
namespace {

namespace fs = std::filesystem;

const std::string kId = "3f4e8a1b2c3d4e5f60718293a4b5c6d7e8f901122334455667788990aabbccdd";
const std::string kOtherId = "9a8b7c6d5e4f30211203f4e5d6c7b8a99a8b7c6d5e4f30211203f4e5d6c7b8a9";
// A pod's uid as the cgroupfs driver writes it, and as the systemd driver does ('-' → '_').
const std::string kPodUid = "2d0f6c0e-5b1a-4c3e-9a7d-1f2e3d4c5b6a";
const std::string kPodUnit = "2d0f6c0e_5b1a_4c3e_9a7d_1f2e3d4c5b6a";

ContainerCgroup docker(const std::string& id) { return {id, ContainerRuntime::kDocker}; }
ContainerCgroup containerd(const std::string& id) { return {id, ContainerRuntime::kContainerd}; }
ContainerCgroup crio(const std::string& id) { return {id, ContainerRuntime::kCrio}; }
ContainerCgroup podman(const std::string& id) { return {id, ContainerRuntime::kPodman}; }
ContainerCgroup unknown(const std::string& id) { return {id, ContainerRuntime::kUnknown}; }

std::optional<ContainerCgroup> container_in(const std::string& proc_cgroup_text) {
  auto cgroups = parse_process_cgroups(proc_cgroup_text);
  EXPECT_TRUE(cgroups.ok());
  return cgroups ? container_of(*cgroups) : std::nullopt;
}

using testing::on_hybrid;
using testing::on_v1;
using testing::on_v2;

void expect_on_every_host(const std::string& path, const std::optional<ContainerCgroup>& want) {
  SCOPED_TRACE(path);
  EXPECT_EQ(container_in(on_v2(path)), want) << "cgroup v2";
  EXPECT_EQ(container_in(on_v1(path)), want) << "cgroup v1";
  EXPECT_EQ(container_in(on_hybrid(path)), want) << "hybrid";
}

TEST(ContainerOf, DockerSystemdDriverOnCgroupV2) {
  EXPECT_EQ(container_in("0::/system.slice/docker-" + kId + ".scope\n"), docker(kId));
}

TEST(ContainerOf, ProcessInACgroupBelowTheContainers) {
  EXPECT_EQ(container_in("0::/system.slice/docker-" + kId + ".scope/init\n"), docker(kId));
}

TEST(ContainerOf, DockerCgroupfsDriverOnCgroupV1) {
  EXPECT_EQ(
      container_in("12:memory:/docker/" + kId + "\n11:cpu,cpuacct:/docker/" + kId + "\n0::/\n"),
      docker(kId));
}

TEST(ContainerOf, HybridHostWithTheContainerOnlyInV1) {
  EXPECT_EQ(container_in("3:perf_event:/\n2:memory:/docker/" + kId + "\n0::/init.scope\n"),
            docker(kId));
}

TEST(ContainerOf, EveryRuntimeOnEveryHost) {
  expect_on_every_host("/system.slice/docker-" + kId + ".scope", docker(kId));
  expect_on_every_host("/docker/" + kId, docker(kId));
  // containerd outside Kubernetes: nerdctl's systemd scope, containerd's own /<namespace>/<id>.
  expect_on_every_host("/system.slice/nerdctl-" + kId + ".scope", containerd(kId));
  expect_on_every_host("/default/" + kId, unknown(kId));
  // podman: systemd (rootful, in a pod, rootless with its inner "container" cgroup), cgroupfs.
  expect_on_every_host("/machine.slice/libpod-" + kId + ".scope", podman(kId));
  expect_on_every_host(
      "/machine.slice/machine-libpod_pod_" + kOtherId + ".slice/libpod-" + kId + ".scope",
      podman(kId));
  expect_on_every_host(
      "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kId + ".scope/container",
      podman(kId));
  expect_on_every_host("/libpod_parent/libpod-" + kId, podman(kId));
  // CRI-O and containerd under Kubernetes, both drivers.
  expect_on_every_host("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                           kPodUnit + ".slice/crio-" + kId + ".scope",
                       crio(kId));
  expect_on_every_host("/kubepods/burstable/pod" + kPodUid + "/crio-" + kId, crio(kId));
  expect_on_every_host("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
                           kPodUnit + ".slice/cri-containerd-" + kId + ".scope",
                       containerd(kId));
  expect_on_every_host("/kubepods/burstable/pod" + kPodUid + "/" + kId, unknown(kId));
}

TEST(ContainerOf, KubernetesQosClassesUnderBothDrivers) {
  struct Case {
    std::string systemd_parent;   // the pod's slice
    std::string cgroupfs_parent;  // the pod's folder
  };
  const std::vector<Case> cases = {
      {"/kubepods.slice/kubepods-pod" + kPodUnit + ".slice", "/kubepods/pod" + kPodUid},
      {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUnit + ".slice",
       "/kubepods/burstable/pod" + kPodUid},
      {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kPodUnit + ".slice",
       "/kubepods/besteffort/pod" + kPodUid},
  };
  for (const Case& pod : cases) {
    expect_on_every_host(pod.systemd_parent + "/cri-containerd-" + kId + ".scope", containerd(kId));
    expect_on_every_host(pod.systemd_parent + "/crio-" + kId + ".scope", crio(kId));
    expect_on_every_host(pod.systemd_parent + "/docker-" + kId + ".scope", docker(kId));
    expect_on_every_host(pod.cgroupfs_parent + "/" + kId, unknown(kId));
    expect_on_every_host(pod.cgroupfs_parent + "/crio-" + kId, crio(kId));
    // The pod's own cgroup holds no container's process.
    expect_on_every_host(pod.systemd_parent, std::nullopt);
    expect_on_every_host(pod.cgroupfs_parent, std::nullopt);
  }
}

TEST(ContainerOf, ConmonIsTheMonitorNotTheContainer) {
  std::string pod_slice =
      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kPodUnit + ".slice";
  expect_on_every_host(pod_slice + "/crio-conmon-" + kId + ".scope", std::nullopt);
  expect_on_every_host("/kubepods/burstable/pod" + kPodUid + "/crio-conmon-" + kId, std::nullopt);
  expect_on_every_host("/machine.slice/libpod-conmon-" + kId + ".scope", std::nullopt);
  expect_on_every_host("/libpod_parent/conmon", std::nullopt);
  // The container beside its monitor is still found.
  expect_on_every_host(pod_slice + "/crio-" + kId + ".scope", crio(kId));
}

TEST(ContainerOf, ProcessesOutsideContainersHaveNone) {
  EXPECT_EQ(container_in("0::/user.slice/user-0.slice/session-1.scope\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/system.slice/docker.service\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/system.slice/containerd.service\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/system.slice/crio.service\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/kubepods.slice\n"), std::nullopt);
  // Not 64 lowercase hex digits: a look-alike name, not a container.
  EXPECT_EQ(container_in("0::/system.slice/docker-1234.scope\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/docker/" + kId.substr(1) + "g\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/kubepods/pod" + kPodUid + "/" + kId.substr(1) + "F\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/system.slice/cri-containerd-" + kId + ".service\n"), std::nullopt);
  // A bare id needs a parent to be a runtime's.
  EXPECT_EQ(container_in("0::/" + kId + "\n"), std::nullopt);
}

TEST(ContainerOf, PathCharactersAreNoId) {
  EXPECT_EQ(container_in("0::/docker/../../etc\n"), std::nullopt);
  EXPECT_EQ(container_in("0::/system.slice/docker-../../" + kId + ".scope\n"), std::nullopt);
  EXPECT_EQ(container_cgroup("kubepods/pod" + kPodUid + "/../" + kId.substr(3)), std::nullopt);
  EXPECT_EQ(container_cgroup("system.slice/crio-" + kId.substr(0, 60) + "/../.scope"),
            std::nullopt);
  EXPECT_FALSE(is_container_id("../" + kId.substr(3)));
  EXPECT_FALSE(is_container_id(kId.substr(0, 62) + "/."));
  EXPECT_TRUE(is_container_id(kId));
}

TEST(ContainerCgroupName, WithAndWithoutTheLeadingSlash) {
  EXPECT_EQ(container_cgroup("system.slice/docker-" + kId + ".scope"), docker(kId));
  EXPECT_EQ(container_cgroup("/system.slice/docker-" + kId + ".scope"), docker(kId));
  EXPECT_EQ(container_cgroup("kubepods/besteffort/pod" + kPodUid + "/" + kId), unknown(kId));
  EXPECT_EQ(container_cgroup("/kubepods/besteffort/pod" + kPodUid + "/" + kId + "/"), unknown(kId));
  // docker_container_id stays docker's alone: --perf-max-docker-containers picks among those.
  EXPECT_EQ(docker_container_id("kubepods/besteffort/pod" + kPodUid + "/" + kId), std::nullopt);
  EXPECT_EQ(docker_container_id("system.slice/crio-" + kId + ".scope"), std::nullopt);
  EXPECT_EQ(docker_container_id("system.slice/docker-" + kId + ".scope"), kId);
}

TEST(DockerContainerName, TheNameWithoutItsSlash) {
  EXPECT_EQ(docker_container_name(R"({"ID":"x","Name":"/web-1","State":{}})"), "web-1");
}

TEST(DockerContainerName, KubernetesContainersByTheirLabels) {
  EXPECT_EQ(docker_container_name(R"({"Name":"/k8s_api_api-7d9f_shop_uid_0","Config":{"Labels":{
      "io.kubernetes.container.name":"api","io.kubernetes.pod.name":"api-7d9f",
      "io.kubernetes.pod.namespace":"shop"}}})"),
            "shop/api-7d9f/api");
  // Labels that do not make a name: docker's own stands.
  EXPECT_EQ(docker_container_name(R"({"Name":"/k8s_api","Config":{"Labels":{
      "io.kubernetes.container.name":"api","io.kubernetes.pod.name":"a/b",
      "io.kubernetes.pod.namespace":"shop"}}})"),
            "k8s_api");
  EXPECT_EQ(docker_container_name(
                R"({"Name":"/web","Config":{"Labels":{"io.kubernetes.container.name":"web"}}})"),
            "web");
  EXPECT_EQ(docker_container_name(R"({"Name":"/web","Config":{"Labels":null}})"), "web");
}

TEST(DockerContainerName, HostileOrMalformedConfigsGiveNoName) {
  EXPECT_EQ(docker_container_name(""), std::nullopt);
  EXPECT_EQ(docker_container_name("{not json"), std::nullopt);
  EXPECT_EQ(docker_container_name("[]"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": 7})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/x", "Config": 5})"), "x");
  // A name must not break the collapsed line it becomes a frame of.
  EXPECT_EQ(docker_container_name(R"({"Name": "/a;b"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/a\nb"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/a\u0007b"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/)" + std::string(1000, 'x') + "\"}"), std::nullopt);
}

TEST(OciBundleName, ContainerdKubernetesAnnotations) {
  EXPECT_EQ(oci_bundle_name(R"({"ociVersion":"1.1.0","annotations":{
      "io.kubernetes.cri.container-type":"container",
      "io.kubernetes.cri.container-name":"worker",
      "io.kubernetes.cri.sandbox-name":"jobs-5c8b9-x2x7q",
      "io.kubernetes.cri.sandbox-namespace":"batch",
      "io.kubernetes.cri.sandbox-id":"abc"}})"),
            "batch/jobs-5c8b9-x2x7q/worker");
  // The pod's sandbox: its pause process.
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"io.kubernetes.cri.container-type":"sandbox",
      "io.kubernetes.cri.sandbox-name":"jobs-5c8b9-x2x7q",
      "io.kubernetes.cri.sandbox-namespace":"batch"}})"),
            "batch/jobs-5c8b9-x2x7q/POD");
}

TEST(OciBundleName, CrioKubernetesAnnotations) {
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{
      "io.kubernetes.cri-o.Name":"k8s_web_front-0_default_uid_1",
      "io.kubernetes.container.name":"web","io.kubernetes.pod.name":"front-0",
      "io.kubernetes.pod.namespace":"default"}})"),
            "default/front-0/web");
}

TEST(OciBundleName, NerdctlName) {
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"nerdctl/name":"redis-1",
      "nerdctl/namespace":"default"}})"),
            "redis-1");
}

TEST(OciBundleName, NoUsableNameGivesNone) {
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{}})"), std::nullopt);
  EXPECT_EQ(oci_bundle_name(R"({"process":{}})"), std::nullopt);
  EXPECT_EQ(oci_bundle_name(R"({"annotations":[]})"), std::nullopt);
  EXPECT_EQ(oci_bundle_name("{\"annotations\":"), std::nullopt);
  EXPECT_EQ(oci_bundle_name("null"), std::nullopt);
  // Part of the Kubernetes triple missing, not text, or unfit for a frame.
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"io.kubernetes.cri.container-name":"w",
      "io.kubernetes.cri.sandbox-name":"p"}})"),
            std::nullopt);
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"io.kubernetes.cri.container-name":"w",
      "io.kubernetes.cri.sandbox-name":"p","io.kubernetes.cri.sandbox-namespace":7}})"),
            std::nullopt);
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"io.kubernetes.container.name":"w;x",
      "io.kubernetes.pod.name":"p","io.kubernetes.pod.namespace":"n"}})"),
            std::nullopt);
  EXPECT_EQ(oci_bundle_name(R"({"annotations":{"nerdctl/name":"a\nb"}})"), std::nullopt);
}

TEST(StorageContainerNames, FirstNameOfEachContainer) {
  auto names = storage_container_names(R"([{"id":")" + kId +
                                       R"(","names":["web","web-alias"],"image":"i","layer":"l",
           "metadata":"{\"image-name\":\"x\"}","big-data-names":["config.json"]},
          {"id":")" + kOtherId + R"(","names":["k8s_api_api-0_shop_uid_0"]}])");
  EXPECT_EQ(names, (std::map<std::string, std::string, std::less<>>{
                       {kId, "web"}, {kOtherId, "k8s_api_api-0_shop_uid_0"}}));
}

TEST(StorageContainerNames, BadEntriesAreLeftOut) {
  auto names = storage_container_names(
      R"([{"id":"../../../etc","names":["escape"]},
          {"id":")" +
      std::string(64, 'A') + R"(","names":["upper"]},
          {"id":")" +
      kId + R"(","names":[]},
          {"id":")" +
      kId + R"(","names":[7]},
          {"id":")" +
      kId + R"(","names":"web"},
          {"id":7,"names":["seven"]},
          "not an object",
          {"id":")" +
      kOtherId + R"(","names":["a;b"]},
          {"id":")" +
      kOtherId + R"(","names":["ok"]}])");
  EXPECT_EQ(names, (std::map<std::string, std::string, std::less<>>{{kOtherId, "ok"}}));
  EXPECT_TRUE(storage_container_names("").empty());
  EXPECT_TRUE(storage_container_names("{}").empty());
  EXPECT_TRUE(storage_container_names("[{\"id\":").empty());
  EXPECT_TRUE(storage_container_names(std::string(100000, '[')).empty());
}

class ContainerNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "container-roots-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { fs::remove_all(root_); }

  ContainerRoots roots() const {
    return {.docker = root_ / "docker",
            .containerd_tasks = {root_ / "containerd-tasks", root_ / "k3s-tasks"},
            .storage = {root_ / "storage", root_ / "run-storage"}};
  }

  void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  void write_docker(const std::string& id, const std::string& text) {
    write(root_ / "docker" / "containers" / id / "config.v2.json", text);
  }
  void write_containerd(const std::string& ns, const std::string& id, const std::string& text) {
    write(root_ / "containerd-tasks" / ns / id / "config.json", text);
  }
  void write_storage_bundle(const std::string& storage, const std::string& id,
                            const std::string& text) {
    write(root_ / storage / "overlay-containers" / id / "userdata" / "config.json", text);
  }
  void write_containers_json(const std::string& text) {
    write(root_ / "storage" / "overlay-containers" / "containers.json", text);
  }

  static std::string crio_bundle(const std::string& ns, const std::string& pod,
                                 const std::string& container) {
    return R"({"ociVersion":"1.0.2","annotations":{"io.kubernetes.container.name":")" + container +
           R"(","io.kubernetes.pod.name":")" + pod + R"(","io.kubernetes.pod.namespace":")" + ns +
           R"("}})";
  }
  static std::string containerd_bundle(const std::string& ns, const std::string& pod,
                                       const std::string& container) {
    return R"({"annotations":{"io.kubernetes.cri.container-type":"container",
        "io.kubernetes.cri.container-name":")" +
           container + R"(","io.kubernetes.cri.sandbox-name":")" + pod +
           R"(","io.kubernetes.cri.sandbox-namespace":")" + ns + R"("}})";
  }

  fs::path root_;
};

TEST_F(ContainerNamesTest, NamesComeFromDockersStateFiles) {
  write_docker(kId, R"({"Name":"/payments-api"})");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(kId), "payments-api");
  EXPECT_EQ(names.name_of(docker(kId)), "payments-api");
}

TEST_F(ContainerNamesTest, TheDockerRootAloneStillNamesDockersContainers) {
  write_docker(kId, R"({"Name":"/payments-api"})");
  ContainerNames names(root_ / "docker");
  EXPECT_EQ(names.name_of(docker(kId)), "payments-api");
}

TEST_F(ContainerNamesTest, ANameThatAppearsLaterIsRead) {
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(kId), kId.substr(0, 12)) << "no state file yet";
  write_docker(kId, R"({"Name":"/late-starter"})");
  EXPECT_EQ(names.name_of(kId), "late-starter");
}

TEST_F(ContainerNamesTest, WithoutAReadableNameTheShortIdStandsIn) {
  std::string broken = std::string(64, 'a');
  write_docker(broken, "{\"Name\":");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(broken), "aaaaaaaaaaaa");
  EXPECT_EQ(names.name_of(kId), kId.substr(0, 12));  // no state file at all
  // Malformed is read again: it may have been caught half-written.
  write_docker(broken, R"({"Name":"/fixed"})");
  EXPECT_EQ(names.name_of(broken), "fixed");
}

TEST_F(ContainerNamesTest, ContainerdKubernetesBundles) {
  write_containerd("k8s.io", kId, containerd_bundle("batch", "jobs-5c8b9-x2x7q", "worker"));
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(containerd(kId)), "batch/jobs-5c8b9-x2x7q/worker");
  // A bare id below kubepods (cgroupfs driver) says no runtime: every runtime's files are tried.
  ContainerNames fresh(roots());
  EXPECT_EQ(fresh.name_of(unknown(kId)), "batch/jobs-5c8b9-x2x7q/worker");
  EXPECT_EQ(ContainerNames(roots()).name_of(kId), "batch/jobs-5c8b9-x2x7q/worker");
}

TEST_F(ContainerNamesTest, ContainerdOutsideKubernetes) {
  write_containerd("default", kId, R"({"annotations":{"nerdctl/name":"redis-1"}})");
  write_containerd("default", kOtherId, R"({"annotations":{}})");  // `ctr run`: no name
  write(root_ / "k3s-tasks" / "k8s.io" / "not-a-bundle", "");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(containerd(kId)), "redis-1");
  EXPECT_EQ(names.name_of(containerd(kOtherId)), kOtherId.substr(0, 12));
}

TEST_F(ContainerNamesTest, K3sContainerdBundles) {
  write(root_ / "k3s-tasks" / "k8s.io" / kId / "config.json",
        containerd_bundle("kube-system", "coredns-6799fbcd5-abcde", "coredns"));
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(containerd(kId)), "kube-system/coredns-6799fbcd5-abcde/coredns");
}

TEST_F(ContainerNamesTest, ABundleWithoutANameIsSettled) {
  write_containerd("default", kId, R"({"annotations":{}})");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(containerd(kId)), kId.substr(0, 12));
  // The bundle is written before the container starts: it is not read again.
  write_containerd("default", kId, R"({"annotations":{"nerdctl/name":"renamed"}})");
  EXPECT_EQ(names.name_of(containerd(kId)), kId.substr(0, 12));
}

TEST_F(ContainerNamesTest, CrioBundlesInTheGraphOrTheRunRoot) {
  write_storage_bundle("storage", kId, crio_bundle("default", "front-0", "web"));
  write_storage_bundle("run-storage", kOtherId, crio_bundle("shop", "api-7d9f", "api"));
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(crio(kId)), "default/front-0/web");
  EXPECT_EQ(names.name_of(crio(kOtherId)), "shop/api-7d9f/api");
}

TEST_F(ContainerNamesTest, CrioBundleBeforeItsStorageName) {
  write_storage_bundle("storage", kId, crio_bundle("default", "front-0", "web"));
  write_containers_json(R"([{"id":")" + kId + R"(","names":["k8s_web_front-0_default_uid_0"]}])");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(crio(kId)), "default/front-0/web");
}

TEST_F(ContainerNamesTest, PodmanNamesFromContainersJson) {
  write_storage_bundle("storage", kId, R"({"annotations":{"io.container.manager":"libpod"}})");
  write_containers_json(R"([{"id":")" + kId + R"(","names":["grafana"],"layer":"x"}])");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(podman(kId)), "grafana");
  EXPECT_EQ(ContainerNames(roots()).name_of(kId), "grafana");
}

TEST_F(ContainerNamesTest, ContainersJsonIsReadAgainWhenItChanges) {
  write_containers_json(R"([{"id":")" + kId + R"(","names":["first"]}])");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(podman(kId)), "first");
  EXPECT_EQ(names.name_of(podman(kOtherId)), kOtherId.substr(0, 12)) << "not there yet";
  write_containers_json(R"([{"id":")" + kId + R"(","names":["first"]},
                            {"id":")" +
                        kOtherId + R"(","names":["second"]}])");
  EXPECT_EQ(names.name_of(podman(kOtherId)), "second");
}

TEST_F(ContainerNamesTest, MalformedMetadataGivesTheShortId) {
  write_containerd("k8s.io", kId, R"({"annotations":{"io.kubernetes.cri.container-name":)");
  write_storage_bundle("storage", kOtherId, "\x01\x02 not json");
  write_containers_json("[{\"id\":\"" + kOtherId + "\",\"names\":[\"cut-off");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(containerd(kId)), kId.substr(0, 12));
  EXPECT_EQ(names.name_of(crio(kOtherId)), kOtherId.substr(0, 12));
  EXPECT_EQ(names.name_of(podman(kOtherId)), kOtherId.substr(0, 12));
  EXPECT_EQ(names.name_of(kOtherId), kOtherId.substr(0, 12));
}

TEST_F(ContainerNamesTest, OversizedMetadataIsNotRead) {
  // Well-formed, named, and one byte over the bound: the size alone keeps the name out.
  std::string config = R"({"Name":"/too-big"})";
  write_docker(kId, config + std::string((1 << 20) - config.size() + 1, ' '));
  std::string bundle = R"({"annotations":{"nerdctl/name":"too-big"}})";
  write_containerd("default", kOtherId, bundle + std::string((1 << 20) - bundle.size() + 1, ' '));
  std::string index = R"([{"id":")" + kOtherId + R"(","names":["too-big"]}])";
  write_containers_json(index + std::string((8 << 20) - index.size() + 1, ' '));
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(docker(kId)), kId.substr(0, 12));
  EXPECT_EQ(names.name_of(containerd(kOtherId)), kOtherId.substr(0, 12));
  EXPECT_EQ(names.name_of(podman(kOtherId)), kOtherId.substr(0, 12));
  // At the bound exactly, they are read.
  write_docker(kId, config + std::string((1 << 20) - config.size(), ' '));
  EXPECT_EQ(names.name_of(docker(kId)), "too-big");
}

TEST_F(ContainerNamesTest, AbsentRootsGiveTheShortId) {
  ContainerNames names(roots());
  for (const auto& container :
       {docker(kId), containerd(kId), crio(kId), podman(kId), unknown(kId)}) {
    EXPECT_EQ(names.name_of(container), kId.substr(0, 12));
  }
}

TEST_F(ContainerNamesTest, LinksAndSpecialFilesAreNotFollowed) {
  write(root_ / "elsewhere.json", R"({"Name":"/linked"})");
  fs::create_directories(root_ / "docker" / "containers" / kId);
  fs::create_symlink(root_ / "elsewhere.json",
                     root_ / "docker" / "containers" / kId / "config.v2.json");
  fs::create_directories(root_ / "containerd-tasks" / "default" / kOtherId);
  ASSERT_EQ(
      ::mkfifo((root_ / "containerd-tasks" / "default" / kOtherId / "config.json").c_str(), 0600),
      0);
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of(docker(kId)), kId.substr(0, 12));
  EXPECT_EQ(names.name_of(containerd(kOtherId)), kOtherId.substr(0, 12)) << "and did not block";
}

TEST_F(ContainerNamesTest, AnIdWithPathCharactersIsRefused) {
  // Files a traversing "id" would reach.
  write(root_ / "docker" / "escape" / "config.v2.json", R"({"Name":"/escaped"})");
  write(root_ / "docker" / "containers" / "x" / "config.v2.json", R"({"Name":"/escaped"})");
  ContainerNames names(roots());
  EXPECT_EQ(names.name_of("../escape"), "");
  EXPECT_EQ(names.name_of(docker("../escape")), "");
  EXPECT_EQ(names.name_of(unknown("x/../x")), "");
  EXPECT_EQ(names.name_of(std::string(64, 'A')), "") << "not lowercase hex";
  EXPECT_EQ(names.name_of(""), "");
}

TEST_F(ContainerNamesTest, ThisProcessIsNotInAContainer) {
  ContainerNames names(roots());
  auto own = read_process_cgroups();
  ASSERT_TRUE(own.ok());
  if (container_of(*own)) GTEST_SKIP() << "the tests run inside a container";
  EXPECT_EQ(names.of_pid(::getpid()), "");
  EXPECT_EQ(names.of_pid(-1), "");  // no such process
  EXPECT_EQ(names.of_pid(0), "") << "perf's swapper samples are not this process";
}

}  // namespace
}  // namespace dormant::inventory
