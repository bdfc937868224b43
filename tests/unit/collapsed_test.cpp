#include "profile/collapsed.h"

#include <algorithm>

#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "profile/metadata_validation.h"
#include "profile/profile_header.h"

namespace dormant::profile {
namespace {

StackTable sample_table() {
  StackTable table;
  std::vector<std::string_view> web = {"main", "handle", "parse"};
  std::vector<std::string_view> kernel = {"main", "write", "ksys_write_[k]"};
  table.add("", "web server", web, 3);
  table.add("", "web server", kernel, 2);
  table.add("db-container", "postgres", std::vector<std::string_view>{"PostmasterMain"}, 5);
  table.add("", "web server", web, 1);
  return table;
}

TEST(StackTable, CountsAndMerges) {
  StackTable table = sample_table();
  EXPECT_EQ(table.total_samples(), 11u);
  EXPECT_EQ(table.distinct_stacks(), 3u);
  StackTable other;
  other.add("", "web server", std::vector<std::string_view>{"main", "handle", "parse"}, 10);
  other.add("", "cron", std::vector<std::string_view>{}, 1);
  table.merge(other);
  EXPECT_EQ(table.total_samples(), 22u);
  EXPECT_EQ(table.distinct_stacks(), 4u);
  StackTable copy = table;
  EXPECT_EQ(copy.total_samples(), 22u);
  table.clear();
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(copy.distinct_stacks(), 4u);
}

TEST(Collapsed, WritesHeaderThenSortedStackLines) {
  std::string text = write_collapsed(sample_table(), {{"profiling_mode", "cpu"}});
  EXPECT_EQ(text,
            "# {\"profiling_mode\":\"cpu\"}\n"
            "0;;web server;main;handle;parse 4\n"
            "0;;web server;main;write;ksys_write_[k] 2\n"
            "0;db-container;postgres;PostmasterMain 5\n");
}

TEST(Collapsed, RoundTrips) {
  StackTable table = sample_table();
  auto read = read_collapsed(write_collapsed(table, {{"k", 1}}));
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->header["k"], 1);
  EXPECT_EQ(write_collapsed(read->stacks, read->header), write_collapsed(table, {{"k", 1}}));
}

TEST(Collapsed, SeparatorsInsideFramesAreNeutralised) {
  StackTable table;
  table.add("", "java", std::vector<std::string_view>{"Lfoo/Bar;run()V", "line\nbreak"}, 1);
  EXPECT_EQ(write_collapsed(table, nlohmann::json::object()),
            "# {}\n0;;java;Lfoo/Bar,run()V;line break 1\n");
}

// gProfiler's --disable-application-metadata: no index field, and the header says so.
TEST(Collapsed, LinesWithoutTheIndexAreReadWhenTheHeaderSaysSo) {
  const std::string text =
      "# {\"application_metadata_enabled\": false}\n"
      ";java;main;run 5\n"
      "web-7f9c;nginx;main 2\n";
  auto read = read_collapsed(text);
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->stacks.total_samples(), 7u);
  std::vector<std::string> seen;
  read->stacks.for_each([&](const StackView& stack) {
    std::string line = std::string(stack.container) + "|" + std::string(stack.comm);
    for (StringId id : stack.frame_ids) line += "|" + std::string(read->stacks.string(id));
    seen.push_back(line);
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"web-7f9c|nginx|main", "|java|main|run"}));
  EXPECT_EQ(write_collapsed(read->stacks, read->header),
            "# {\"application_metadata_enabled\":false}\n;java;main;run 5\nweb-7f9c;nginx;main 2\n")
      << "written back in the same layout";
  auto too_short = read_collapsed("# {\"application_metadata_enabled\": false}\njava 1\n");
  ASSERT_FALSE(too_short.ok());
  EXPECT_EQ(too_short.error().message(), "line 2: expected 'container;comm;frames... count'");
  // With the index kept (true, or no word of it), "0;;java" is index, container and comm.
  EXPECT_TRUE(read_collapsed("# {\"application_metadata_enabled\": true}\n0;;java;main 1\n").ok());
  EXPECT_FALSE(read_collapsed("# {}\n;java;main 1\n").ok());
}

// Dormant's agents once wrote "application_metadata_enabled": false above indexed lines; the
// profiles they uploaded are still read as they meant them.
TEST(Collapsed, IndexedLinesUnderAHeaderThatDeniesThemAreReadAsIndexed) {
  auto read = read_collapsed(
      "# {\"application_metadata_enabled\": false}\n0;;java;main 5\n0;web-7f9c;nginx;main 2\n");
  ASSERT_TRUE(read.ok()) << read.error().message();
  std::vector<std::string> comms;
  read->stacks.for_each([&](const StackView& stack) { comms.emplace_back(stack.comm); });
  std::sort(comms.begin(), comms.end());
  EXPECT_EQ(comms, (std::vector<std::string>{"java", "nginx"}));
  // One line without the index: the header is right, and "0" on the others is a container.
  auto mixed =
      read_collapsed("# {\"application_metadata_enabled\": false}\n0;java;main 5\n;nginx;main 2\n");
  ASSERT_TRUE(mixed.ok()) << mixed.error().message();
  std::vector<std::string> containers;
  mixed->stacks.for_each([&](const StackView& stack) { containers.emplace_back(stack.container); });
  std::sort(containers.begin(), containers.end());
  EXPECT_EQ(containers, (std::vector<std::string>{"", "0"}));
}

TEST(Collapsed, MalformedProfilesSayWhichLine) {
  auto expect_error = [](std::string_view text, std::string_view message) {
    auto read = read_collapsed(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.error().message(), message);
  };
  expect_error("0;;a;b 1\n", "line 1: the profile must start with '# {header}'");
  expect_error("# {broken\n", "line 1: the profile header after '#' is not a JSON object");
  expect_error("# []\n", "line 1: the profile header after '#' is not a JSON object");
  expect_error("# {}\n0;;a;b 1\n0;;a;b\n", "line 3: no sample count at the end");
  expect_error("# {}\n\n0;;a;b x1\n", "line 3: 'x1' is not a sample count");
  expect_error("# {}\n0;;a;b 0\n", "line 2: '0' is not a sample count");
  expect_error("# {}\nab 3\n", "line 2: expected 'index;container;comm;frames... count'");
  expect_error("# {}\nx;;comm;f 3\n", "line 2: 'x' is not an application-metadata index");
  expect_error("# {}\n0;;a 18446744073709551615\n0;;b 1\n",
               "line 3: the sample counts add up to more than 2^64");
  std::string deepest = "# {}\n0;;app";
  for (size_t i = 0; i < kMaxStackDepth; ++i) deepest += ";f";
  EXPECT_TRUE(read_collapsed(deepest + " 1\n").ok());
  expect_error(deepest + ";f 1\n", "line 2: more than 2048 frames");
}

TEST(ProfileHeader, HoldsWhatPerformanceStudioValidates) {
  SnapshotInfo snapshot;
  snapshot.agent_version = "0.1.0";
  snapshot.cpu_avg = 12.5;
  snapshot.containers = {"web-1"};
  nlohmann::json header = make_profile_header(read_host_info(), snapshot);
  ASSERT_TRUE(validate_profile_header(header).ok())
      << validate_profile_header(header).error().message();
  // Every metadata field gProfiler writes (docs/protocol.md), not only those Studio checks.
  for (const char* field : {"python_version",
                            "run_mode",
                            "deployment_type",
                            "kernel_release",
                            "kernel_version",
                            "system_name",
                            "processors",
                            "cpu_model_name",
                            "cpu_flags",
                            "memory_capacity_mb",
                            "hostname",
                            "system",
                            "os_name",
                            "os_release",
                            "os_codename",
                            "libc_type",
                            "libc_version",
                            "hardware_type",
                            "pid",
                            "mac_address",
                            "private_ip",
                            "spawn_uptime_ms",
                            "cloud_provider",
                            "cloud_info",
                            "agent_version",
                            "spawn_time",
                            "run_arguments",
                            "big_data",
                            "external_metadata",
                            "current_time",
                            "profiling_mode"}) {
    EXPECT_TRUE(header["metadata"].contains(field)) << field;
  }
  EXPECT_EQ(header["metadata"]["deployment_type"], "instances");
  EXPECT_EQ(header["metrics"]["cpu_avg"], 12.5);
  EXPECT_EQ(header["application_metadata"], nlohmann::json::array({nullptr}));
  EXPECT_EQ(header["containers"], nlohmann::json::array({"web-1"}));
}

TEST(ProfileHeader, FrequencyIsAWholeNumberOrItsText) {
  auto frequency = [](nlohmann::json value) {
    return header_frequency({{"metadata", {{"run_arguments", {{"frequency", value}}}}}});
  };
  EXPECT_EQ(frequency(11), 11u);
  EXPECT_EQ(frequency("11"), 11u) << "as some agents send it";
  for (nlohmann::json bad : {nlohmann::json(-1), nlohmann::json("11 Hz"), nlohmann::json(""),
                             nlohmann::json(nullptr), nlohmann::json("-3")}) {
    EXPECT_EQ(frequency(bad), 0u) << bad;
  }
  EXPECT_EQ(header_frequency(nlohmann::json::object()), 0u);
}

TEST(ProfileHeader, CarriesThisHostsRealValues) {
  nlohmann::json metadata = make_profile_header(read_host_info(), SnapshotInfo())["metadata"];
  utsname names{};
  ASSERT_EQ(::uname(&names), 0);
  char hostname[256] = {};
  ASSERT_EQ(::gethostname(hostname, sizeof(hostname) - 1), 0);
  EXPECT_EQ(metadata["hostname"], hostname);
  EXPECT_EQ(metadata["system_name"], names.sysname);
  EXPECT_EQ(metadata["kernel_release"], names.release);
  EXPECT_EQ(metadata["hardware_type"], names.machine);
  EXPECT_EQ(metadata["processors"], ::sysconf(_SC_NPROCESSORS_ONLN));
  EXPECT_EQ(metadata["pid"], ::getpid());
  EXPECT_EQ(metadata["libc_version"], ::gnu_get_libc_version());
  long pages = ::sysconf(_SC_PHYS_PAGES) * ::sysconf(_SC_PAGESIZE) / (1 << 20);
  EXPECT_NEAR(metadata["memory_capacity_mb"].get<double>(), static_cast<double>(pages),
              static_cast<double>(pages) / 10);
  std::string cpuinfo = read_file("/proc/cpuinfo").value_or("");
  std::string flags = metadata["cpu_flags"];
  if (cpuinfo.find("\nflags") != std::string::npos) {
    EXPECT_NE(flags.find("fpu"), std::string::npos) << flags;  // every x86-64 CPU has one
  }
  EXPECT_NE(std::string(metadata["current_time"]).find('T'), std::string::npos);
}

}  // namespace
}  // namespace dormant::profile
