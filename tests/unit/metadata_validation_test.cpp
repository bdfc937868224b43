#include "profile/metadata_validation.h"

#include <string>

#include <gtest/gtest.h>

namespace dormant::profile {
namespace {

using nlohmann::json;

std::string error_of(const Result<void>& result) {
  return result.ok() ? "(accepted)" : result.error().message();
}

// A header as the stock gProfiler agent writes it (times as naive UTC text), trimmed to what
// Studio reads.
json stock_header() {
  return json::parse(R"({
    "containers": [], "container_names_enabled": true,
    "metadata": {
      "python_version": "3.10.12", "run_mode": "standalone_executable",
      "deployment_type": "instances", "kernel_release": "6.1.0-18-amd64",
      "kernel_version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1", "system_name": "Linux",
      "processors": 16, "cpu_model_name": "AMD EPYC", "memory_capacity_mb": 64215,
      "hostname": "web-01", "os_name": "Debian GNU/Linux", "os_release": "12",
      "libc_type": "glibc", "libc_version": "2.36", "hardware_type": "x86_64", "pid": 4242,
      "mac_address": "02:42:ac:11:00:02", "private_ip": "10.1.2.3",
      "spawn_uptime_ms": 123456.789, "cloud_provider": "unknown", "cloud_info": {},
      "agent_version": "1.53.1", "spawn_time": "2026-08-05T09:11:12",
      "run_arguments": {"service_name": "web", "perf_mode": "fp"}, "big_data": {},
      "current_time": "2026-08-05T10:11:12", "profiling_mode": "cpu"},
    "metrics": {"cpu_avg": 12.5, "mem_avg": 40.0}
  })");
}

TEST(MetadataValidation, StockHeaderPasses) {
  EXPECT_TRUE(validate_profile_header(stock_header()).ok());
}

TEST(MetadataValidation, OptionalObjectsMayBeLeftOut) {
  json header = stock_header();
  header["metadata"].erase("cloud_info");
  header["metadata"].erase("big_data");
  EXPECT_TRUE(validate_profile_header(header).ok());
}

TEST(MetadataValidation, EveryRequiredFieldIsRequired) {
  for (const char* field : {"current_time",    "spawn_time",         "spawn_uptime_ms",
                            "private_ip",      "hostname",           "cloud_provider",
                            "processors",      "memory_capacity_mb", "system_name",
                            "os_name",         "os_release",         "kernel_release",
                            "kernel_version",  "hardware_type",      "pid",
                            "mac_address",     "agent_version",      "libc_type",
                            "libc_version",    "python_version",     "run_mode",
                            "deployment_type", "run_arguments"}) {
    json header = stock_header();
    header["metadata"].erase(field);
    EXPECT_EQ(error_of(validate_profile_header(header)),
              std::string("metadata.") + field + ": required");
  }
}

TEST(MetadataValidation, TypesAreChecked) {
  struct Case {
    const char* field;
    json value;
    std::string message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"kernel_release", true, "metadata.kernel_release: must be a string"},
           {"kernel_release", json::array(), "metadata.kernel_release: must be a string"},
           {"hostname", nullptr, "metadata.hostname: must be a string"},
           {"processors", "sixteen", "metadata.processors: must be a number"},
           {"processors", "1.5", "metadata.processors: must be a number"},
           {"processors", "", "metadata.processors: must be a number"},
           {"processors", true, "metadata.processors: must be a number"},
           {"memory_capacity_mb", json::array(), "metadata.memory_capacity_mb: must be a number"},
           {"pid", json::object(), "metadata.pid: must be a number"},
           {"spawn_uptime_ms", "1 ms", "metadata.spawn_uptime_ms: must be a number"},
           {"run_arguments", "--flag", "metadata.run_arguments: must be an object"},
           {"run_arguments", nullptr, "metadata.run_arguments: must be an object"},
           {"cloud_info", json::array(), "metadata.cloud_info: must be an object"},
           {"big_data", nullptr, "metadata.big_data: must be an object"},
           {"cloud_provider", "DigitalOcean",
            "metadata.cloud_provider: must be one of AWS, GCP, Azure, Unknown"},
           {"cloud_provider", 1,
            "metadata.cloud_provider: must be one of AWS, GCP, Azure, Unknown"},
           {"current_time", "yesterday",
            "metadata.current_time: must be an ISO-8601 time or a number of seconds"},
           {"current_time", true,
            "metadata.current_time: must be an ISO-8601 time or a number of seconds"},
           {"spawn_time", "2026-08-05",
            "metadata.spawn_time: must be an ISO-8601 time or a number of seconds"},
       }) {
    json header = stock_header();
    header["metadata"][c.field] = c.value;
    EXPECT_EQ(error_of(validate_profile_header(header)), c.message) << c.field;
  }
}

// Studio's model converts what it can: so do we, or a header Studio keeps would be lost here.
TEST(MetadataValidation, WhatStudiosModelConvertsIsAccepted) {
  struct Case {
    const char* field;
    json value;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"kernel_release", 6},
           {"os_release", 12.04},
           {"processors", "16"},
           {"processors", " -2 "},
           {"memory_capacity_mb", 64215.0},
           {"pid", "4242"},
           {"spawn_uptime_ms", 123456.789},
           {"current_time", "1785000000.5"},
           {"spawn_time", 1785000000},
       }) {
    json header = stock_header();
    header["metadata"][c.field] = c.value;
    EXPECT_EQ(error_of(validate_profile_header(header)), "(accepted)") << c.field << " " << c.value;
  }
}

TEST(MetadataValidation, CloudProviderIgnoresCase) {
  for (const char* provider : {"AWS", "aws", "Gcp", "AZURE", "Unknown", "unknown"}) {
    json header = stock_header();
    header["metadata"]["cloud_provider"] = provider;
    EXPECT_TRUE(validate_profile_header(header).ok()) << provider;
  }
}

TEST(MetadataValidation, TimesAreIsoStringsOrNumbers) {
  for (json time :
       {json("2026-08-05T10:11:12"), json("2026-08-05 10:11:12"), json("2026-08-05T10:11"),
        json("2026-08-05T10:11:12.123456"), json("2026-08-05T10:11:12Z"),
        json("2026-08-05T10:11:12+02:00"), json("2026-08-05T10:11:12.5-0530"),
        json("2026-08-05T10:11:12+02"), json(1785000000), json(1785000000.5)}) {
    json header = stock_header();
    header["metadata"]["current_time"] = time;
    EXPECT_TRUE(validate_profile_header(header).ok()) << time;
  }
  for (const char* time : {"", "2026-08-05T", "2026-8-05T10:11:12", "2026-08-05T10:11:12.",
                           "2026-02-30T10:11:12", "1e400", "nan", "0x10", "2026-08-05T10:11:12+02:",
                           "2026-08-05T10:11:12 junk", "2026-08-05T10:11:12Zx"}) {
    json header = stock_header();
    header["metadata"]["current_time"] = time;
    EXPECT_FALSE(validate_profile_header(header).ok()) << time;
  }
}

TEST(MetadataValidation, HeaderAndMetadataMustBeObjects) {
  EXPECT_EQ(error_of(validate_profile_header(json::array())), "header: must be an object");
  EXPECT_EQ(error_of(validate_profile_header("metadata")), "header: must be an object");
  EXPECT_EQ(error_of(validate_profile_header(json::object())), "metadata: required");
  EXPECT_EQ(error_of(validate_profile_header({{"metadata", {1, 2}}})),
            "metadata: must be an object");
  EXPECT_EQ(error_of(validate_profile_header({{"metadata", nullptr}})),
            "metadata: must be an object");
}

TEST(MetadataValidation, HostileValuesNeverThrow) {
  json deep = json::array();
  for (int i = 0; i < 100000; ++i) deep = json::array({std::move(deep)});
  json header = stock_header();
  header["metadata"]["run_arguments"]["deep"] = std::move(deep);
  header["metadata"]["hostname"] = std::string("web\0\"'\xff", 7);
  header["junk"] = std::string(1 << 20, 'x');
  Result<void> result = ok();
  ASSERT_NO_THROW(result = validate_profile_header(header));
  EXPECT_TRUE(result.ok());  // Studio checks types, not contents
}

}  // namespace
}  // namespace dormant::profile
