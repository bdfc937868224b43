#include "profilers/system/containers.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <stdlib.h>

namespace dormant::profilers::system {
namespace {

const std::string kId = "3f4e8a1b2c3d4e5f60718293a4b5c6d7e8f901122334455667788990aabbccdd";

std::optional<std::string> container_of(const std::string& proc_cgroup_text) {
  auto cgroups = parse_process_cgroups(proc_cgroup_text);
  EXPECT_TRUE(cgroups.ok());
  return cgroups ? docker_container_of(*cgroups) : std::nullopt;
}

TEST(DockerContainerOf, SystemdDriverOnCgroupV2) {
  EXPECT_EQ(container_of("0::/system.slice/docker-" + kId + ".scope\n"), kId);
}

TEST(DockerContainerOf, ProcessInACgroupBelowTheContainers) {
  EXPECT_EQ(container_of("0::/system.slice/docker-" + kId + ".scope/init\n"), kId);
}

TEST(DockerContainerOf, CgroupfsDriverOnCgroupV1) {
  EXPECT_EQ(
      container_of("12:memory:/docker/" + kId + "\n11:cpu,cpuacct:/docker/" + kId + "\n0::/\n"),
      kId);
}

TEST(DockerContainerOf, HybridHostWithTheContainerOnlyInV1) {
  EXPECT_EQ(container_of("3:perf_event:/\n2:memory:/docker/" + kId + "\n0::/init.scope\n"), kId);
}

TEST(DockerContainerOf, ProcessesOutsideContainersHaveNone) {
  EXPECT_EQ(container_of("0::/user.slice/user-0.slice/session-1.scope\n"), std::nullopt);
  EXPECT_EQ(container_of("0::/\n"), std::nullopt);
  EXPECT_EQ(container_of("0::/system.slice/docker.service\n"), std::nullopt);
  // Not 64 hex digits: a look-alike name, not a container.
  EXPECT_EQ(container_of("0::/system.slice/docker-1234.scope\n"), std::nullopt);
  EXPECT_EQ(container_of("0::/docker/" + kId.substr(1) + "g\n"), std::nullopt);
}

TEST(DockerContainerName, TheNameWithoutItsSlash) {
  EXPECT_EQ(docker_container_name(R"({"ID":"x","Name":"/web-1","State":{}})"), "web-1");
}

TEST(DockerContainerName, HostileOrMalformedConfigsGiveNoName) {
  EXPECT_EQ(docker_container_name(""), std::nullopt);
  EXPECT_EQ(docker_container_name("{not json"), std::nullopt);
  EXPECT_EQ(docker_container_name("[]"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": 7})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/"})"), std::nullopt);
  // A name must not break the collapsed line it becomes a frame of.
  EXPECT_EQ(docker_container_name(R"({"Name": "/a;b"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/a\nb"})"), std::nullopt);
  EXPECT_EQ(docker_container_name(R"({"Name": "/)" + std::string(1000, 'x') + "\"}"), std::nullopt);
}

class ContainerNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "docker-root-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write_config(const std::string& id, const std::string& text) {
    std::filesystem::create_directories(root_ / "containers" / id);
    std::ofstream(root_ / "containers" / id / "config.v2.json") << text;
  }

  std::filesystem::path root_;
};

TEST_F(ContainerNamesTest, NamesComeFromDockersStateFiles) {
  write_config(kId, R"({"Name":"/payments-api"})");
  ContainerNames names(root_);
  EXPECT_EQ(names.name_of(kId), "payments-api");
}

TEST_F(ContainerNamesTest, ANameThatAppearsLaterIsRead) {
  ContainerNames names(root_);
  EXPECT_EQ(names.name_of(kId), kId.substr(0, 12)) << "no state file yet";
  write_config(kId, R"({"Name":"/late-starter"})");
  EXPECT_EQ(names.name_of(kId), "late-starter");
}

TEST_F(ContainerNamesTest, WithoutAReadableNameTheShortIdStandsIn) {
  std::string broken = std::string(64, 'a');
  write_config(broken, "{\"Name\":");
  ContainerNames names(root_);
  EXPECT_EQ(names.name_of(broken), "aaaaaaaaaaaa");
  EXPECT_EQ(names.name_of(kId), kId.substr(0, 12));  // no state file at all
}

TEST_F(ContainerNamesTest, ThisProcessIsNotInAContainer) {
  ContainerNames names(root_);
  auto own = read_process_cgroups();
  ASSERT_TRUE(own.ok());
  if (docker_container_of(*own)) GTEST_SKIP() << "the tests run inside a docker container";
  EXPECT_EQ(names.of_pid(::getpid()), "");
  EXPECT_EQ(names.of_pid(-1), "");  // no such process
  EXPECT_EQ(names.of_pid(0), "") << "perf's swapper samples are not this process";
}

}  // namespace
}  // namespace dormant::profilers::system
