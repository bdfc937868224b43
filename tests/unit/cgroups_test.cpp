
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "inventory/container_cgroups.h"
#include "inventory/process_cgroups.h"
#include "profilers/system/cgroup_layout.h"
#include "profilers/system/cgroup_selection.h"
#include "profilers/system/cgroup_usage.h"
#include "profilers/system/perf_cgroups.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;
using inventory::docker_container_id;
using inventory::parse_process_cgroups;
using inventory::read_process_cgroups;

// This development host: systemd hybrid, no v1 perf_event.
constexpr std::string_view kHybridMountinfo =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// Ubuntu 20.04: hybrid with a v1 perf_event hierarchy, which perf prefers.
constexpr std::string_view kHybridWithPerfEventMountinfo =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw\n"
    "35 24 0:30 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
    "cgroup2 rw,nsdelegate\n"
    "37 35 0:32 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup "
    "cgroup rw,xattr,name=systemd\n"
    "41 35 0:36 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup "
    "cgroup rw,cpu,cpuacct\n"
    "42 35 0:37 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup "
    "cgroup rw,memory\n"
    "44 35 0:39 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime shared:18 - cgroup "
    "cgroup rw,perf_event\n";

// Ubuntu 22.04 / Fedora: unified only.
constexpr std::string_view kV2Mountinfo =
    "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
    "31 22 0:27 / /sys/fs/pstore rw,nosuid,nodev,noexec,relatime shared:10 - pstore pstore rw\n";

// CentOS 7: v1 only.
constexpr std::string_view kV1Mountinfo =
    "18 40 0:17 / /sys rw,nosuid,nodev,noexec,relatime shared:6 - sysfs sysfs rw\n"
    "24 18 0:20 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:7 - tmpfs tmpfs ro,mode=755\n"
    "25 24 0:21 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:8 - cgroup "
    "cgroup rw,xattr,release_agent=/usr/lib/systemd/systemd-cgroups-agent,name=systemd\n"
    "28 24 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:9 - cgroup "
    "cgroup rw,cpu,cpuacct\n"
    "29 24 0:25 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:10 - cgroup "
    "cgroup rw,memory\n"
    "30 24 0:26 / /sys/fs/cgroup/perf_event rw,nosuid,nodev,noexec,relatime shared:11 - cgroup "
    "cgroup rw,perf_event\n"
    "40 0 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/centos-root rw,attr2,inode64\n";

std::string container_id(char digit) { return std::string(64, digit); }

// ---- layout ----

TEST(CgroupLayout, HybridWithoutPerfEventUsesTheUnifiedHierarchy) {
  auto layout = parse_cgroup_layout(kHybridMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->version, CgroupVersion::kHybrid);
  ASSERT_TRUE(layout->unified);
  EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_FALSE(layout->perf_event);
  ASSERT_TRUE(layout->cpuacct && layout->memory);
  EXPECT_EQ(layout->cpuacct->mount_point, "/sys/fs/cgroup/cpuacct");
  EXPECT_EQ(layout->memory->mount_point, "/sys/fs/cgroup/memory");
  ASSERT_TRUE(layout->perf_hierarchy());
  EXPECT_EQ(layout->perf_hierarchy()->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_TRUE(layout->perf_uses_unified());
  EXPECT_EQ(describe(*layout),
            "hybrid (cgroup2 at /sys/fs/cgroup/unified); perf -G names cgroups under "
            "/sys/fs/cgroup/unified");
}

TEST(CgroupLayout, HybridWithPerfEventPrefersTheV1Hierarchy) {
  auto layout = parse_cgroup_layout(kHybridWithPerfEventMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->version, CgroupVersion::kHybrid);
  EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(layout->cpuacct->mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(layout->perf_hierarchy()->mount_point, "/sys/fs/cgroup/perf_event");
  EXPECT_FALSE(layout->perf_uses_unified());
}

TEST(CgroupLayout, PureV2) {
  auto layout = parse_cgroup_layout(kV2Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->version, CgroupVersion::kV2);
  EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup");
  EXPECT_FALSE(layout->perf_event || layout->cpuacct || layout->memory);
  EXPECT_EQ(layout->perf_hierarchy()->mount_point, "/sys/fs/cgroup");
  EXPECT_TRUE(layout->perf_uses_unified());
}

TEST(CgroupLayout, PureV1) {
  auto layout = parse_cgroup_layout(kV1Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->version, CgroupVersion::kV1);
  EXPECT_FALSE(layout->unified);
  EXPECT_EQ(layout->perf_event->mount_point, "/sys/fs/cgroup/perf_event");
  EXPECT_EQ(layout->cpuacct->mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(layout->memory->mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(layout->perf_hierarchy()->mount_point, "/sys/fs/cgroup/perf_event");
}

TEST(CgroupLayout, V1WithoutPerfEventHasNoPerfHierarchy) {
  std::string text = "28 24 0:24 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
  auto layout = parse_cgroup_layout(text);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->version, CgroupVersion::kV1);
  EXPECT_FALSE(layout->perf_hierarchy());
  EXPECT_NE(describe(*layout).find("cannot select cgroups"), std::string::npos);
  auto listed = list_cgroups(*layout, "/nonexistent");
  ASSERT_FALSE(listed.ok());
  EXPECT_EQ(listed.error().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(listed.error().message().find("perf_event"), std::string::npos);
}

TEST(CgroupLayout, KeepsTheFirstMountAndTheMountRoot) {
  // Inside a container without a cgroup namespace: the mount shows a sub-tree.
  std::string text =
      "600 590 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n"
      "700 590 0:26 / /mnt/other\\040cgroup rw - cgroup2 cgroup2 rw\n";
  auto layout = parse_cgroup_layout(text);
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup");
  EXPECT_EQ(layout->unified->root, "/docker/abc");

  auto escaped = parse_cgroup_layout("700 590 0:26 / /mnt/other\\040cgroup rw - cgroup2 c rw\n");
  ASSERT_TRUE(escaped.ok());
  EXPECT_EQ(escaped->unified->mount_point, "/mnt/other cgroup");
}

TEST(CgroupLayout, NamedOnlyV1HierarchyIsNotAController) {
  std::string text =
      "30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
      "31 30 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n";
  auto layout = parse_cgroup_layout(text);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(layout->version, CgroupVersion::kV2);
}

TEST(CgroupLayout, NoCgroupFilesystemIsUnavailable) {
  auto layout = parse_cgroup_layout(
      "22 28 0:21 / /sys rw - sysfs sysfs rw\n"
      "31 22 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.error().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(layout.error().message().find("mount -t cgroup2"), std::string::npos);
  EXPECT_FALSE(parse_cgroup_layout("").ok());
}

TEST(CgroupLayout, MalformedLineIsAParseError) {
  auto layout = parse_cgroup_layout("22 28 0:21 / /sys rw - sysfs sysfs rw\nnot a mount line\n");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.error().kind(), ErrorKind::kParse);
  EXPECT_NE(layout.error().message().find("line 2"), std::string::npos);
}

TEST(CgroupLayout, UnreadableMountTableSaysWhatToCheck) {
  auto layout = detect_cgroup_layout("/nonexistent/mountinfo");
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.error().message().find("/proc mounted"), std::string::npos);
  EXPECT_NE(layout.error().message().find("/nonexistent/mountinfo"), std::string::npos);
}

bool is_filesystem(const char* path, long magic) {
  struct statfs info {};
  return ::statfs(path, &info) == 0 && static_cast<long>(info.f_type) == magic;
}

// Checks the parser against what statfs says about this host's real mounts.
TEST(CgroupLayout, ThisHost) {
  if (::access("/proc/self/mountinfo", R_OK) != 0) {
    GTEST_SKIP() << "/proc/self/mountinfo is not readable here";
  }
  auto layout = detect_cgroup_layout();
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  std::printf("this host: %s\n", describe(*layout).c_str());
  if (is_filesystem("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC) &&
      is_filesystem("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC)) {
    EXPECT_EQ(layout->version, CgroupVersion::kHybrid);
    ASSERT_TRUE(layout->unified);
    EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup/unified");
  } else if (is_filesystem("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC)) {
    EXPECT_EQ(layout->version, CgroupVersion::kV2);
    EXPECT_EQ(layout->unified->mount_point, "/sys/fs/cgroup");
  } else {
    GTEST_SKIP() << "neither a systemd hybrid nor a pure cgroup2 layout under /sys/fs/cgroup";
  }
  if (layout->perf_hierarchy()) {
    auto cgroups = list_cgroups(*layout);
    EXPECT_TRUE(cgroups.ok()) << cgroups.error().message();
  }
}

// ---- a fake host: /proc/self/mountinfo and cgroup trees under a temporary root ----

class FakeHost : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-cgroups-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }

  void mountinfo(std::string_view text) { write(root_ / "proc/self/mountinfo", text); }

  // A cgroup directory `name` in the hierarchy mounted at `mount`, holding `files`.
  void cgroup(std::string_view mount, std::string_view name,
              const std::map<std::string, std::string>& files = {}) {
    fs::path dir = root_ / fs::path(mount).relative_path() / name;
    fs::create_directories(dir);
    for (const auto& [file, content] : files) write(dir / file, content);
  }

  // A v2 cgroup with `pids`, CPU in seconds and memory in MiB.
  void v2_cgroup(std::string_view name, std::string pids, uint64_t cpu_s, uint64_t memory_mib) {
    cgroup("/sys/fs/cgroup", name,
           {{"cgroup.procs", pids},
            {"cpu.stat",
             "usage_usec " + std::to_string(cpu_s * 1000000) + "\nuser_usec 1\nsystem_usec 2\n"},
            {"memory.current", std::to_string(memory_mib << 20) + "\n"}});
  }

  Result<std::vector<CgroupPick>> choose(size_t max_cgroups, size_t max_docker = 0) {
    return choose_perf_cgroups({max_cgroups, max_docker}, root_);
  }

  static void write(const fs::path& path, std::string_view text) {
    std::ofstream out(path);
    out << text;
    ASSERT_TRUE(out.good()) << path;
  }

  fs::path root_;
};

std::vector<std::string> names(const Result<std::vector<CgroupPick>>& picks) {
  EXPECT_TRUE(picks.ok()) << picks.error().message();
  return picks.ok() ? perf_cgroup_names(*picks) : std::vector<std::string>{};
}

TEST_F(FakeHost, ListsV2CgroupsWithProcessesBelowThem) {
  mountinfo(kV2Mountinfo);
  cgroup("/sys/fs/cgroup", "", {{"cgroup.procs", "1\n2\n"}});
  cgroup("/sys/fs/cgroup", "system.slice", {{"cgroup.procs", ""}});
  v2_cgroup("system.slice/nginx.service", "100\n101\n", 50, 100);
  v2_cgroup("system.slice/idle.service", "", 900, 900);
  cgroup("/sys/fs/cgroup", "user.slice/user-1000.slice/session-1.scope",
         {{"cgroup.procs", "300\n"}});

  auto layout = parse_cgroup_layout(kV2Mountinfo);
  ASSERT_TRUE(layout.ok());
  auto cgroups = list_cgroups(*layout, root_);
  ASSERT_TRUE(cgroups.ok()) << cgroups.error().message();
  std::vector<std::string> listed;
  for (const CgroupUsage& cgroup : *cgroups) listed.push_back(cgroup.name);
  EXPECT_EQ(listed, (std::vector<std::string>{"system.slice", "system.slice/nginx.service",
                                              "user.slice", "user.slice/user-1000.slice",
                                              "user.slice/user-1000.slice/session-1.scope"}));
  const CgroupUsage& nginx = (*cgroups)[1];
  EXPECT_EQ(nginx.cpu_ns, 50'000'000'000u);
  EXPECT_EQ(nginx.memory_bytes, 100u << 20);
  EXPECT_EQ(nginx.processes, 2u);
  EXPECT_EQ(nginx.subtree_processes, 2u);
  EXPECT_EQ((*cgroups)[0].processes, 0u);
  EXPECT_EQ((*cgroups)[0].subtree_processes, 2u);
  // The session has no cpu.stat or memory.current: zero, not an error.
  EXPECT_EQ((*cgroups)[4].cpu_ns, 0u);
  EXPECT_EQ((*cgroups)[4].memory_bytes, 0u);
}

TEST_F(FakeHost, CpuOutweighsMemoryTenToOne) {
  mountinfo(kV2Mountinfo);
  cgroup("/sys/fs/cgroup", "");
  // CPU 50 s vs 10 s; memory 100 MiB vs 4 GiB. Scores: 10 + 0.02 vs 2 + 1.
  v2_cgroup("system.slice/cpu-heavy.service", "10\n", 50, 100);
  v2_cgroup("system.slice/memory-heavy.service", "20\n", 10, 4096);
  // Same CPU as memory-heavy, less memory: memory breaks the tie.
  v2_cgroup("system.slice/small.service", "30\n", 10, 1024);

  auto picks = choose(10);
  EXPECT_EQ(names(picks), (std::vector<std::string>{"system.slice/cpu-heavy.service",
                                                    "system.slice/memory-heavy.service",
                                                    "system.slice/small.service"}));
  ASSERT_EQ(picks->size(), 3u);
  EXPECT_NEAR((*picks)[0].score, 10 + 100.0 / 4096, 1e-9);
  EXPECT_NEAR((*picks)[1].score, 2 + 1, 1e-9);
  EXPECT_NEAR((*picks)[2].score, 2 + 0.25, 1e-9);
  EXPECT_EQ((*picks)[0].cpu_ns, 50'000'000'000u);
  EXPECT_EQ((*picks)[1].memory_bytes, 4096ull << 20);
}

TEST_F(FakeHost, TopNCutAndZeroMeansNone) {
  mountinfo(kV2Mountinfo);
  cgroup("/sys/fs/cgroup", "");
  for (int i = 1; i <= 5; ++i) {
    v2_cgroup("system.slice/s" + std::to_string(i) + ".service", "1\n", i, 0);
  }
  EXPECT_EQ(names(choose(2)),
            (std::vector<std::string>{"system.slice/s5.service", "system.slice/s4.service"}));
  EXPECT_TRUE(names(choose(0)).empty());
}

TEST_F(FakeHost, NothingQualifiesGivesAnEmptyList) {
  mountinfo(kV2Mountinfo);
  cgroup("/sys/fs/cgroup", "", {{"cgroup.procs", "1\n2\n3\n"}});
  v2_cgroup("system.slice/stopped.service", "", 100, 100);
  cgroup("/sys/fs/cgroup", "init.scope");
  auto picks = choose(50, 10);
  ASSERT_TRUE(picks.ok()) << picks.error().message();
  EXPECT_TRUE(picks->empty());
}

TEST_F(FakeHost, MissingHierarchyDirectoryIsAnError) {
  mountinfo(kV2Mountinfo);
  auto picks = choose(50);
  ASSERT_FALSE(picks.ok());
  EXPECT_NE(picks.error().message().find("cannot list the cgroups"), std::string::npos);
  EXPECT_NE(picks.error().message().find("sys/fs/cgroup"), std::string::npos);
}

TEST_F(FakeHost, HybridReadsCpuFromUnifiedAndMemoryFromV1) {
  mountinfo(kHybridMountinfo);
  std::string id = container_id('a');
  std::string scope = "system.slice/docker-" + id + ".scope";
  cgroup("/sys/fs/cgroup/unified", "");
  cgroup("/sys/fs/cgroup/unified", scope,
         {{"cgroup.procs", "500\n"}, {"cpu.stat", "usage_usec 2000000\nuser_usec 1\n"}});
  cgroup("/sys/fs/cgroup/memory", scope, {{"memory.usage_in_bytes", "123456789\n"}});
  cgroup("/sys/fs/cgroup/cpuacct", scope, {{"cpuacct.usage", "999\n"}});
  // No memory hierarchy counterpart: memory 0.
  cgroup("/sys/fs/cgroup/unified", "system.slice/cron.service",
         {{"cgroup.procs", "600\n"}, {"cpu.stat", "usage_usec 1000000\n"}});

  auto picks = choose(5);
  ASSERT_TRUE(picks.ok()) << picks.error().message();
  ASSERT_EQ(picks->size(), 2u);
  EXPECT_EQ((*picks)[0].name, scope);
  EXPECT_EQ((*picks)[0].cpu_ns, 2'000'000'000u);
  EXPECT_EQ((*picks)[0].memory_bytes, 123456789u);
  EXPECT_TRUE((*picks)[0].docker_container);
  EXPECT_EQ((*picks)[1].name, "system.slice/cron.service");
  EXPECT_EQ((*picks)[1].memory_bytes, 0u);
  EXPECT_FALSE((*picks)[1].docker_container);
}

// eBPF picks in the cgroup2 hierarchy even where perf would use v1 perf_event, and gives each pick
// its cgroup v2 id: the inode of its directory.
TEST_F(FakeHost, UnifiedChoiceIgnoresPerfEventAndCarriesIds) {
  mountinfo(kHybridWithPerfEventMountinfo);
  cgroup("/sys/fs/cgroup/perf_event", "");
  cgroup("/sys/fs/cgroup/perf_event", "only.v1", {{"cgroup.procs", "700\n"}});
  cgroup("/sys/fs/cgroup/unified", "");
  cgroup("/sys/fs/cgroup/unified", "system.slice/cron.service",
         {{"cgroup.procs", "600\n"}, {"cpu.stat", "usage_usec 1000000\n"}});
  auto picks = choose_unified_cgroups({5, 0}, root_);
  ASSERT_TRUE(picks.ok()) << picks.error().message();
  ASSERT_EQ(picks->size(), 1u);
  EXPECT_EQ((*picks)[0].name, "system.slice/cron.service");
  struct stat directory {};
  ASSERT_EQ(::stat((root_ / "sys/fs/cgroup/unified/system.slice/cron.service").c_str(), &directory),
            0);
  EXPECT_EQ((*picks)[0].id, directory.st_ino);
  EXPECT_EQ(names(choose(5)), std::vector<std::string>{"only.v1"}) << "perf's choice";
}

TEST_F(FakeHost, UnifiedChoiceWithoutCgroup2SaysWhy) {
  mountinfo(kV1Mountinfo);
  auto picks = choose_unified_cgroups({5, 0}, root_);
  ASSERT_FALSE(picks.ok());
  EXPECT_EQ(picks.error().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(picks.error().message().find("no cgroup2 hierarchy"), std::string::npos)
      << picks.error().message();
}

TEST_F(FakeHost, V1DockerContainersWithMissingFiles) {
  mountinfo(kV1Mountinfo);
  std::string busy = "docker/" + container_id('1');
  std::string quiet = "docker/" + container_id('2');
  std::string bare = "docker/" + container_id('3');
  cgroup("/sys/fs/cgroup/perf_event", "", {{"cgroup.procs", "1\n"}});
  cgroup("/sys/fs/cgroup/perf_event", "docker", {{"cgroup.procs", ""}});
  for (const std::string& name : {busy, quiet, bare}) {
    cgroup("/sys/fs/cgroup/perf_event", name, {{"cgroup.procs", "42\n"}});
  }
  cgroup("/sys/fs/cgroup/cpu,cpuacct", busy, {{"cpuacct.usage", "9000000000\n"}});
  cgroup("/sys/fs/cgroup/cpu,cpuacct", quiet, {{"cpuacct.usage", "1000000000\n"}});
  cgroup("/sys/fs/cgroup/memory", busy, {{"memory.usage_in_bytes", "1048576\n"}});
  cgroup("/sys/fs/cgroup/memory", quiet, {{"memory.usage_in_bytes", "2097152\n"}});

  auto picks = choose(10);
  EXPECT_EQ(names(picks), (std::vector<std::string>{busy, quiet, bare}));
  ASSERT_EQ(picks->size(), 3u);
  EXPECT_EQ((*picks)[0].cpu_ns, 9'000'000'000u);
  EXPECT_EQ((*picks)[1].memory_bytes, 2097152u);
  EXPECT_EQ((*picks)[2].cpu_ns, 0u);
  EXPECT_EQ((*picks)[2].memory_bytes, 0u);
  EXPECT_EQ((*picks)[2].score, 0);
}

TEST_F(FakeHost, DockerModePicksTopContainersIndividually) {
  mountinfo(kV2Mountinfo);
  cgroup("/sys/fs/cgroup", "");
  std::string first = "system.slice/docker-" + container_id('a') + ".scope";
  std::string second = "system.slice/docker-" + container_id('b') + ".scope";
  std::string third = "system.slice/docker-" + container_id('c') + ".scope";
  v2_cgroup(first, "", 30, 10);  // its processes live one level down
  v2_cgroup(first + "/init.scope", "11\n", 30, 10);
  v2_cgroup(second, "12\n", 20, 10);
  v2_cgroup(third, "13\n", 5, 10);
  v2_cgroup("system.slice/sshd.service", "20\n", 25, 10);
  v2_cgroup("system.slice/cron.service", "21\n", 1, 10);

  // Without docker mode everything competes; the container's inner cgroup is nested, skipped.
  EXPECT_EQ(names(choose(2)), (std::vector<std::string>{first, "system.slice/sshd.service"}));

  // Two containers, then one other slot; never the inner cgroup of a container.
  EXPECT_EQ(names(choose(3, 2)),
            (std::vector<std::string>{first, "system.slice/sshd.service", second}));
  // max_cgroups 0: containers only.
  auto only = choose(0, 2);
  EXPECT_EQ(names(only), (std::vector<std::string>{first, second}));
  for (const CgroupPick& pick : *only) EXPECT_TRUE(pick.docker_container);
  // Fewer containers than asked: the rest of max_cgroups goes to other cgroups.
  EXPECT_EQ(names(choose(5, 10)),
            (std::vector<std::string>{first, "system.slice/sshd.service", second, third,
                                      "system.slice/cron.service"}));
}

// ---- selection on given numbers ----

CgroupUsage usage(std::string name, uint64_t cpu_ns, uint64_t memory_bytes, size_t own = 1) {
  return {std::move(name), cpu_ns, memory_bytes, own, own + 1};
}

TEST(SelectCgroups, NeverPicksAParentWithItsChild) {
  // v1 allows processes in a cgroup that also has children; both hold processes here.
  std::vector<CgroupUsage> cgroups = {usage("app", 100, 0), usage("app/worker", 90, 0),
                                      usage("batch", 50, 0), usage("batch/job", 10, 0)};
  std::vector<CgroupPick> picks = select_cgroups(cgroups, {10, 0});
  EXPECT_EQ(perf_cgroup_names(picks), (std::vector<std::string>{"app", "batch"}));
  // A sibling whose name merely starts the same is not nested.
  picks = select_cgroups({usage("app", 100, 0), usage("app2", 90, 0)}, {10, 0});
  EXPECT_EQ(perf_cgroup_names(picks), (std::vector<std::string>{"app", "app2"}));
}

TEST(SelectCgroups, SkipsNamesPerfCannotTakeAndEmptyCgroups) {
  std::vector<CgroupUsage> cgroups = {usage("a,b", 100, 0), usage("idle", 100, 0, 0),
                                      usage("ok", 1, 0)};
  EXPECT_EQ(perf_cgroup_names(select_cgroups(cgroups, {10, 0})), (std::vector<std::string>{"ok"}));
  EXPECT_TRUE(select_cgroups({}, {10, 10}).empty());
  EXPECT_TRUE(select_cgroups(cgroups, {0, 0}).empty());
}

TEST(SelectCgroups, AllZeroUsageStillQualifies) {
  std::vector<CgroupPick> picks = select_cgroups({usage("b", 0, 0), usage("a", 0, 0)}, {10, 0});
  EXPECT_EQ(perf_cgroup_names(picks), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(picks[0].score, 0);
}

TEST(DockerContainerId, BothDrivers) {
  std::string id = container_id('f');
  EXPECT_EQ(docker_container_id("docker/" + id), id);
  EXPECT_EQ(docker_container_id("system.slice/docker-" + id + ".scope"), id);
  EXPECT_EQ(docker_container_id("docker-" + id + ".scope"), id);
  EXPECT_EQ(docker_container_id("kubepods/docker/" + id), id);
  EXPECT_FALSE(docker_container_id("docker"));
  EXPECT_FALSE(docker_container_id("docker/" + id + "/init.scope"));
  EXPECT_FALSE(docker_container_id("docker/abc123"));
  EXPECT_FALSE(docker_container_id("docker/" + container_id('F')));
  EXPECT_FALSE(docker_container_id("other/" + id));
  EXPECT_FALSE(docker_container_id(id));
  EXPECT_FALSE(docker_container_id("system.slice/docker.service"));
  EXPECT_FALSE(docker_container_id("system.slice/containerd-" + id + ".scope"));
}

TEST(PerfCgroupArguments, OneEventPerCgroup) {
  EXPECT_EQ(perf_cgroup_arguments("cpu-clock", {"docker/a", "system.slice/b.service"}),
            (std::vector<std::string>{"-e", "cpu-clock", "-e", "cpu-clock", "-G",
                                      "docker/a,system.slice/b.service"}));
  EXPECT_TRUE(perf_cgroup_arguments("cpu-clock", {}).empty());
}

// ---- /proc/PID/cgroup ----

TEST(ProcessCgroups, Hybrid) {
  auto cgroups = parse_process_cgroups(
      "9:name=systemd:/\n"
      "4:memory:/process_api/b7426a92bdfd9e17\n"
      "2:cpu,cpuacct:/docker/abc\n"
      "0::/system.slice/docker-abc.scope\n");
  ASSERT_TRUE(cgroups.ok()) << cgroups.error().message();
  EXPECT_EQ(cgroups->unified, "/system.slice/docker-abc.scope");
  EXPECT_EQ(cgroups->v1.at("memory"), "/process_api/b7426a92bdfd9e17");
  EXPECT_EQ(cgroups->v1.at("cpu"), "/docker/abc");
  EXPECT_EQ(cgroups->v1.at("cpuacct"), "/docker/abc");
  EXPECT_EQ(cgroups->v1.at("name=systemd"), "/");
  EXPECT_EQ(cgroups->v1.size(), 4u);
}

TEST(ProcessCgroups, PureV2AndPureV1) {
  auto v2 = parse_process_cgroups("0::/user.slice/user-1000.slice/session-2.scope\n");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->unified, "/user.slice/user-1000.slice/session-2.scope");
  EXPECT_TRUE(v2->v1.empty());

  auto v1 = parse_process_cgroups("11:perf_event:/docker/abc\n1:name=systemd:/a:b\n");
  ASSERT_TRUE(v1.ok());
  EXPECT_FALSE(v1->unified);
  EXPECT_EQ(v1->v1.at("perf_event"), "/docker/abc");
  EXPECT_EQ(v1->v1.at("name=systemd"), "/a:b");
}

TEST(ProcessCgroups, MalformedLineIsAParseError) {
  auto cgroups = parse_process_cgroups("0::/\ngarbage\n");
  ASSERT_FALSE(cgroups.ok());
  EXPECT_EQ(cgroups.error().kind(), ErrorKind::kParse);
}

TEST(ProcessCgroups, ThisProcess) {
  auto cgroups = read_process_cgroups();
  ASSERT_TRUE(cgroups.ok()) << cgroups.error().message();
  EXPECT_TRUE(cgroups->unified || !cgroups->v1.empty());
  EXPECT_FALSE(read_process_cgroups(-5).ok());
}

}  // namespace
}  // namespace dormant::profilers::system
