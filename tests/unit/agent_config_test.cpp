#include "config/agent_config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/subprocess.h"
#include "config/server_urls.h"

namespace dormant::config {
namespace {

namespace fs = std::filesystem;

// A group no file of the tests belongs to (Debian's nogroup).
constexpr gid_t kNobodysGroup = 65534;

struct Outcome {
  std::optional<AgentConfig> config;
  int exit_code = 0;
  std::string text;
};

Outcome parse(std::vector<std::string> args) {
  std::vector<const char*> argv = {"dormant-agent"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  auto parsed = parse_agent_args(static_cast<int>(argv.size()), argv.data());
  if (auto* config = std::get_if<AgentConfig>(&parsed)) return {*config, 0, {}};
  const auto& exit = std::get<ExitRequest>(parsed);
  return {std::nullopt, exit.exit_code, exit.text};
}

// Sets environment variables for one test and removes them afterwards.
class ScopedEnv {
 public:
  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    names_.push_back(name);
  }
  ~ScopedEnv() {
    for (const std::string& name : names_) ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::string> names_;
};

class AgentConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dormant-config-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (const char* name : {"ca.pem", "client.pem", "client.key"}) std::ofstream(dir_ / name);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Readable by its owner only, or the agent refuses it.
  std::string write_config(const std::string& content) {
    fs::path path = dir_ / "agent.conf";
    std::ofstream(path) << content;
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
    return path.string();
  }
  std::string file(const char* name) const { return (dir_ / name).string(); }

  // Fails the test unless parsing fails with exit code 2 and a message containing `expected`.
  void expect_rejected(std::vector<std::string> args, const std::string& expected) {
    Outcome outcome = parse(args);
    EXPECT_FALSE(outcome.config.has_value()) << "accepted: " << testing::PrintToString(args);
    EXPECT_EQ(outcome.exit_code, 2);
    EXPECT_NE(outcome.text.find(expected), std::string::npos)
        << "message: " << outcome.text << "expected to contain: " << expected;
  }

  fs::path dir_;
};

TEST_F(AgentConfigTest, DefaultsAreGprofilers) {
  Outcome outcome = parse({"-o", "/tmp/out"});
  ASSERT_TRUE(outcome.config) << outcome.text;
  const AgentConfig& c = *outcome.config;
  EXPECT_FALSE(c.enable_heartbeat_server);
  EXPECT_EQ(c.heartbeat_interval_s, 30);
  EXPECT_EQ(c.server_upload_timeout_s, 120);
  EXPECT_FALSE(c.no_verify);
  EXPECT_EQ(c.heartbeat_perf_restricted_max_processes, 600);
  EXPECT_EQ(c.heartbeat_perf_restricted_max_containers, 2);
  EXPECT_EQ(c.heartbeat_perf_aggressive_max_processes, 1500);
  EXPECT_EQ(c.heartbeat_perf_aggressive_max_containers, 50);
  EXPECT_FALSE(c.upload_results);
  EXPECT_TRUE(c.flamegraph);
  EXPECT_FALSE(c.rotating_output);
  EXPECT_EQ(c.duration_s, 60);
  EXPECT_EQ(c.frequency_hz, 11);
  EXPECT_FALSE(c.continuous);
  EXPECT_TRUE(c.pids.empty());
  EXPECT_EQ(c.mode, ProfilingMode::kCpu);
  EXPECT_EQ(c.perf_mode, PerfMode::kFp);
  EXPECT_EQ(c.perf_events, std::vector<std::string>{"cycles"});
  EXPECT_EQ(c.system_profiler, SystemProfiler::kAuto);
  EXPECT_EQ(c.gpu_mode, GpuMode::kMerge);
  EXPECT_TRUE(c.launch_command.empty());
  EXPECT_EQ(c.perf_dwarf_stack_size, 8192);
  EXPECT_FALSE(c.perf_use_cgroups);
  EXPECT_EQ(c.perf_max_cgroups, 50);
  EXPECT_EQ(c.perf_max_docker_containers, 0);
  EXPECT_EQ(c.skip_system_profilers_above, 0);
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.state_dir, "/var/lib/dormant");
}

// One flag, the value to give it, and how to see that it arrived.
struct FlagCase {
  std::string name;
  std::string value;  // "" for a flag that takes none
  std::function<bool(const AgentConfig&)> arrived;
};

class EveryFlag : public AgentConfigTest {
 protected:
  std::vector<FlagCase> cases() const {
    return {
        {"enable-heartbeat-server", "", [](auto& c) { return c.enable_heartbeat_server; }},
        {"api-server", "https://ctl.example:8443",
         [](auto& c) { return c.api_server == "https://ctl.example:8443"; }},
        {"server-host", "https://up.example",
         [](auto& c) { return c.upload_server() == "https://up.example"; }},
        {"heartbeat-interval", "5", [](auto& c) { return c.heartbeat_interval_s == 5; }},
        {"inventory-interval", "0", [](auto& c) { return c.inventory_interval_s == 0; }},
        {"heartbeat-workload-name-labels", "team/app,component",
         [](auto& c) {
           return c.workload_name_labels == std::vector<std::string>{"team/app", "component"};
         }},
        {"heartbeat-workload-kind-labels", "team/kind",
         [](auto& c) { return c.workload_kind_labels == std::vector<std::string>{"team/kind"}; }},
        {"profiler-stop-timeout", "0.25",
         [](auto& c) { return c.profiler_stop_deadline() == std::chrono::milliseconds(250); }},
        {"server-upload-timeout", "9", [](auto& c) { return c.server_upload_timeout_s == 9; }},
        {"token", "t0ken", [](auto& c) { return c.token == "t0ken"; }},
        {"service-name", "web", [](auto& c) { return c.service_name == "web"; }},
        {"allow-insecure-http", "", [](auto& c) { return c.allow_insecure_http; }},
        {"no-verify", "", [](auto& c) { return c.no_verify; }},
        {"tls-ca-bundle", file("ca.pem"),
         [this](auto& c) { return c.tls_ca_bundle == file("ca.pem"); }},
        {"state-dir", "/run/dormant", [](auto& c) { return c.state_dir == "/run/dormant"; }},
        {"heartbeat-perf-restricted-max-processes", "601",
         [](auto& c) { return c.heartbeat_perf_restricted_max_processes == 601; }},
        {"heartbeat-perf-restricted-max-containers", "3",
         [](auto& c) { return c.heartbeat_perf_restricted_max_containers == 3; }},
        {"heartbeat-perf-aggressive-max-processes", "1501",
         [](auto& c) { return c.heartbeat_perf_aggressive_max_processes == 1501; }},
        {"heartbeat-perf-aggressive-max-containers", "51",
         [](auto& c) { return c.heartbeat_perf_aggressive_max_containers == 51; }},
        {"output-dir", "/srv/profiles", [](auto& c) { return c.output_dir == "/srv/profiles"; }},
        {"upload-results", "", [](auto& c) { return c.upload_results; }},
        {"flamegraph", "false", [](auto& c) { return !c.flamegraph; }},
        {"output-format", "pprof,collapsed",
         [](auto& c) {
           return c.output_formats == std::vector<std::string>{"pprof", "collapsed"};
         }},
        {"rotating-output", "", [](auto& c) { return c.rotating_output; }},
        {"profiling-duration", "30", [](auto& c) { return c.duration_s == 30; }},
        {"profiling-frequency", "99", [](auto& c) { return c.frequency_hz == 99; }},
        {"continuous", "", [](auto& c) { return c.continuous; }},
        {"pids", "10,20",
         [](auto& c) {
           return c.pids == std::vector<int>{10, 20};
         }},
        {"mode", "none", [](auto& c) { return c.mode == ProfilingMode::kNone; }},
        {"perf-mode", "dwarf", [](auto& c) { return c.perf_mode == PerfMode::kDwarf; }},
        {"perf-events", "cpu-cycles,cache-misses,cycles",
         [](auto& c) {
           return c.perf_events == std::vector<std::string>{"cycles", "cache-misses"};
         }},
        {"system-profiler", "perf",
         [](auto& c) { return c.system_profiler == SystemProfiler::kPerf; }},
        {"gpu-mode", "gpu-only", [](auto& c) { return c.gpu_mode == GpuMode::kGpuOnly; }},
        {"cupti-library", "/opt/lib/libdormant_cupti.so",
         [](auto& c) { return c.cupti_library == "/opt/lib/libdormant_cupti.so"; }},
        {"perf-dwarf-stack-size", "16384",
         [](auto& c) { return c.perf_dwarf_stack_size == 16384; }},
        {"perf-use-cgroups", "", [](auto& c) { return c.perf_use_cgroups; }},
        {"perf-max-cgroups", "7", [](auto& c) { return c.perf_max_cgroups == 7; }},
        {"perf-max-docker-containers", "4",
         [](auto& c) { return c.perf_max_docker_containers == 4; }},
        {"ebpf-stack-map-entries", "4096",
         [](auto& c) { return c.ebpf_stack_map_entries == 4096; }},
        {"ebpf-count-map-entries", "65536",
         [](auto& c) { return c.ebpf_count_map_entries == 65536; }},
        {"ebpf-process-map-entries", "1024",
         [](auto& c) { return c.ebpf_process_map_entries == 1024; }},
        {"ebpf-unwind", "fp", [](auto& c) { return !c.ebpf_unwind_tables; }},
        {"max-processes-runtime-profiler", "50",
         [](auto& c) { return c.max_processes_runtime_profiler == 50; }},
        {"python-skip-pyperf-profiler-above", "30",
         [](auto& c) { return c.python_skip_pyperf_profiler_above == 30; }},
        {"ebpf-unwind-table-mb", "16", [](auto& c) { return c.ebpf_unwind_table_mb == 16; }},
        {"skip-system-profilers-above", "900",
         [](auto& c) { return c.skip_system_profilers_above == 900; }},
        {"log-level", "debug", [](auto& c) { return c.log_level == "debug"; }},
    };
  }

  // Enough other flags for any one flag to pass validation, without the one under test.
  std::vector<std::string> base_args(const std::string& except) const {
    std::vector<std::pair<std::string, std::string>> base = {{"api-server", "https://a.example"},
                                                             {"service-name", "svc"},
                                                             {"token", "tok"},
                                                             {"output-dir", "/tmp/o"}};
    std::vector<std::string> args;
    for (auto& [name, value] : base) {
      if (name == except) continue;
      args.push_back("--" + name);
      args.push_back(value);
    }
    return args;
  }

  static std::string env_name(const std::string& flag) {
    std::string env = "DORMANT_";
    for (char c : flag) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    return env;
  }
  static std::string plain_value(const FlagCase& flag) {
    return flag.value.empty() ? "true" : flag.value;
  }
};

TEST_F(EveryFlag, FromTheCommandLine) {
  for (const FlagCase& flag : cases()) {
    std::vector<std::string> args = base_args(flag.name);
    args.push_back(flag.value.empty() || flag.name == "flamegraph"
                       ? "--" + flag.name + (flag.value.empty() ? "" : "=" + flag.value)
                       : "--" + flag.name);
    if (!flag.value.empty() && flag.name != "flamegraph") args.push_back(flag.value);
    Outcome outcome = parse(args);
    ASSERT_TRUE(outcome.config) << flag.name << ": " << outcome.text;
    EXPECT_TRUE(flag.arrived(*outcome.config)) << flag.name;
  }
}

TEST_F(EveryFlag, FromTheEnvironment) {
  for (const FlagCase& flag : cases()) {
    ScopedEnv env;
    env.set(env_name(flag.name), plain_value(flag));
    Outcome outcome = parse(base_args(flag.name));
    ASSERT_TRUE(outcome.config) << env_name(flag.name) << ": " << outcome.text;
    EXPECT_TRUE(flag.arrived(*outcome.config)) << env_name(flag.name);
  }
}

TEST_F(EveryFlag, FromAConfigFile) {
  for (const FlagCase& flag : cases()) {
    std::string path =
        write_config("# written by the test\n" + flag.name + " = " + plain_value(flag) + "\n");
    std::vector<std::string> args = base_args(flag.name);
    args.insert(args.end(), {"--config", path});
    Outcome outcome = parse(args);
    ASSERT_TRUE(outcome.config) << flag.name << ": " << outcome.text;
    EXPECT_TRUE(flag.arrived(*outcome.config)) << flag.name;
  }
}

TEST_F(AgentConfigTest, GpuModeAndTheGpuSubcommand) {
  EXPECT_EQ(parse({"-o", "/x", "--gpu-mode", "gpu-only"}).config->gpu_mode, GpuMode::kGpuOnly);
  expect_rejected({"-o", "/x", "--gpu-mode", "gpu"}, "--gpu-mode");
  Outcome outcome = parse({"gpu", "-o", "/x", "--gpu-mode", "cpu-only", "--", "./app", "-n", "3"});
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->launch_command, (std::vector<std::string>{"./app", "-n", "3"}));
  EXPECT_EQ(outcome.config->gpu_mode, GpuMode::kCpuOnly);
  EXPECT_EQ(outcome.config->output_dir, "/x");
  expect_rejected({"gpu", "-o", "/x"}, "program");
  expect_rejected({"gpu", "-o", "/x", "-c", "--", "./app"}, "-c");
  expect_rejected({"gpu", "--", "./app"}, "nothing would be kept");
}

TEST_F(AgentConfigTest, ShortFlagsAndNegations) {
  Outcome outcome =
      parse({"-o", "/x", "-d", "5", "-f", "49", "-c", "-u", "--token", "t", "--service-name", "s",
             "--server-host", "https://h", "--no-flamegraph", "--pids", "1", "--pids", "2,3"});
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->duration_s, 5);
  EXPECT_EQ(outcome.config->frequency_hz, 49);
  EXPECT_TRUE(outcome.config->continuous);
  EXPECT_TRUE(outcome.config->upload_results);
  EXPECT_FALSE(outcome.config->flamegraph);
  EXPECT_EQ(outcome.config->pids, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(parse({"-o", "/x", "--perf-mode", "none"}).config->perf_mode, PerfMode::kDisabled);
}

TEST_F(AgentConfigTest, PrecedenceIsCommandLineThenEnvironmentThenFileThenDefault) {
  std::string path = write_config(
      "profiling-frequency = 21\nprofiling-duration = 22\n"
      "heartbeat-interval = 23\n");
  ScopedEnv env;
  env.set("DORMANT_PROFILING_FREQUENCY", "31");
  env.set("DORMANT_PROFILING_DURATION", "32");
  Outcome outcome = parse({"-o", "/x", "--config", path, "-f", "41"});
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->frequency_hz, 41);              // command line over env and file
  EXPECT_EQ(outcome.config->duration_s, 32);                // env over file
  EXPECT_EQ(outcome.config->heartbeat_interval_s, 23);      // file over default
  EXPECT_EQ(outcome.config->server_upload_timeout_s, 120);  // default
}

TEST_F(AgentConfigTest, ConfigFileFromTheEnvironment) {
  ScopedEnv env;
  env.set("DORMANT_CONFIG", write_config("[dormant]\nprofiling-frequency = 77\n"));
  Outcome outcome = parse({"-o", "/x"});
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->frequency_hz, 77);
  env.set("DORMANT_CONFIG", file("missing.conf"));
  expect_rejected({"-o", "/x"}, "missing.conf");
}

TEST_F(AgentConfigTest, HeartbeatModeNeedsServerServiceAndToken) {
  std::vector<std::string> full = {"--enable-heartbeat-server",
                                   "--api-server",
                                   "https://ctl",
                                   "--service-name",
                                   "web",
                                   "--token",
                                   "t"};
  Outcome outcome = parse(full);
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->upload_server(), "https://ctl");
  expect_rejected({"--enable-heartbeat-server", "--service-name", "web", "--token", "t"},
                  "--enable-heartbeat-server needs --api-server");
  expect_rejected({"--enable-heartbeat-server", "--api-server", "https://ctl", "--token", "t"},
                  "--enable-heartbeat-server needs --service-name");
  expect_rejected(
      {"--enable-heartbeat-server", "--api-server", "https://ctl", "--service-name", "web"},
      "--enable-heartbeat-server needs --token");
}

TEST_F(AgentConfigTest, FrequencyRange) {
  expect_rejected({"-o", "/x", "-f", "0"}, "--profiling-frequency: Value 0 not in range 1 to 1000");
  expect_rejected({"-o", "/x", "-f", "1001"}, "--profiling-frequency: Value 1001 not in range");
  expect_rejected({"-o", "/x", "-f", "200", "--perf-mode", "dwarf"},
                  "-f/--profiling-frequency must be 1-100 with --perf-mode dwarf (got 200)");
  expect_rejected({"-o", "/x", "-f", "101", "--perf-mode", "smart"},
                  "-f/--profiling-frequency must be 1-100 with --perf-mode smart (got 101)");
  expect_rejected({"-o", "/x", "-f", "fast"}, "--profiling-frequency");
  EXPECT_TRUE(parse({"-o", "/x", "-f", "100", "--perf-mode", "dwarf"}).config);
  EXPECT_TRUE(parse({"-o", "/x", "-f", "1000"}).config);
}

// auto is eBPF where it loads, else perf; perf's unwinding modes and switches still rule perf.
TEST_F(AgentConfigTest, TheSystemProfilerFollowsTheFlagsAndPerfsModes) {
  auto choice = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"-o", "/x"});
    auto outcome = parse(args);
    return outcome.config ? cpu_profilers(*outcome.config) : CpuProfilers::kNone;
  };
  EXPECT_EQ(choice({}), CpuProfilers::kEbpfElsePerf);
  EXPECT_EQ(choice({"--system-profiler", "ebpf"}), CpuProfilers::kEbpf);
  EXPECT_EQ(choice({"--system-profiler", "perf"}), CpuProfilers::kPerf);
  EXPECT_EQ(choice({"--system-profiler", "disabled"}), CpuProfilers::kNone);
  EXPECT_EQ(choice({"--perf-mode", "dwarf", "-f", "99"}), CpuProfilers::kPerf);
  EXPECT_EQ(choice({"--perf-mode", "smart", "-f", "99"}), CpuProfilers::kPerf);
  EXPECT_EQ(choice({"--perf-mode", "disabled"}), CpuProfilers::kNone);
  EXPECT_EQ(choice({"--perf-use-cgroups"}), CpuProfilers::kEbpfElsePerf);
  EXPECT_EQ(choice({"--perf-use-cgroups", "--system-profiler", "ebpf"}), CpuProfilers::kEbpf);
  EXPECT_EQ(choice({"--perf-mode", "disabled", "--system-profiler", "ebpf"}), CpuProfilers::kEbpf);
  EXPECT_EQ(choice({"--mode", "none"}), CpuProfilers::kNone);
  expect_rejected({"-o", "/x", "--system-profiler", "ebpf", "--perf-mode", "dwarf", "-f", "99"},
                  "--perf-mode dwarf is how perf unwinds: it needs --system-profiler perf or auto "
                  "(the eBPF sampler unwinds by its own tables: --ebpf-unwind)");
  expect_rejected({"-o", "/x", "--system-profiler", "bpf"}, "--system-profiler");
}

TEST_F(AgentConfigTest, InvalidValuesAreRejectedWithTheirFlag) {
  expect_rejected({"-o", "/x", "-d", "0"}, "--profiling-duration: Value 0 not in range");
  expect_rejected({"-o", "/x", "--pids", "12,abc"}, "--pids: 'abc' is not a process id");
  expect_rejected({"-o", "/x", "--pids", "-5"}, "--pids");
  expect_rejected({"-o", "/x", "--pids", "0"}, "--pids: '0' is not a process id");
  expect_rejected({"-o", "/x", "--perf-dwarf-stack-size", "65536"},
                  "--perf-dwarf-stack-size: Value 65536 not in range 8 to 65528");
  expect_rejected({"-o", "/x", "--perf-mode", "lbr"}, "--perf-mode");
  expect_rejected({"-o", "/x", "--perf-events", "cycles,bogus"},
                  "--perf-events: 'bogus' is not a supported perf event (cycles, instructions, "
                  "cache-misses, cache-references, branch-misses, branch-instructions, "
                  "stalled-cycles-frontend, stalled-cycles-backend)");
  expect_rejected({"-o", "/x", "--ebpf-stack-map-entries", "1000000"},
                  "--ebpf-stack-map-entries: Value 1000000 not in range 64 to 262144");
  expect_rejected({"-o", "/x", "--ebpf-count-map-entries", "0"}, "--ebpf-count-map-entries");
  expect_rejected({"-o", "/x", "--mode", "wall"}, "--mode");
  expect_rejected({"-o", "/x", "--output-format", "collapsed,png"}, "--output-format");
  expect_rejected({"-o", "/x", "--heartbeat-interval", "0"}, "--heartbeat-interval");
  expect_rejected({"-o", "/x", "--inventory-interval", "-1"}, "--inventory-interval");
  expect_rejected({"-o", "/x", "--perf-max-cgroups", "-1"}, "--perf-max-cgroups");
  expect_rejected({"-o", "/x", "--log-level", "loud"}, "--log-level");
  expect_rejected({"-o", "/x", "--tls-ca-bundle", "/nonexistent/ca.pem"}, "--tls-ca-bundle");
  expect_rejected({"-o", "/x", "--tls-client-cert", file("client.pem")},
                  "--tls-client-cert and --tls-client-key go together");
  expect_rejected({"-o", "/x", "--api-server", "ctl.example"},
                  "--api-server must be an http:// or https:// URL");
  expect_rejected({"-o", "/x", "--bogus-flag"}, "--bogus-flag");
  expect_rejected({}, "nothing would be kept: give -o/--output-dir DIR, -u/--upload-results");
  expect_rejected({"-u", "--server-host", "https://h", "--service-name", "s"},
                  "-u/--upload-results needs --token");
}

TEST_F(AgentConfigTest, BadEnvironmentValuesAreRejected) {
  ScopedEnv env;
  env.set("DORMANT_PROFILING_FREQUENCY", "5000");
  expect_rejected({"-o", "/x"}, "--profiling-frequency: Value 5000 not in range");
}

TEST_F(AgentConfigTest, ConfigFileProblemsSayWhere) {
  expect_rejected({"-o", "/x", "--config", write_config("# ok\n\nfrequency 10\n")},
                  "agent.conf, line 3: expected 'name = value', got 'frequency 10'");
  expect_rejected({"-o", "/x", "--config", write_config("profiling-duration = 5\nspeed = 3\n")},
                  "agent.conf, line 2: unknown option 'speed'");
  expect_rejected({"-o", "/x", "--config", write_config("token =\n")},
                  "agent.conf, line 1: 'token' has no value");
  expect_rejected({"-o", "/x", "--config", write_config("\n\nprofiling-frequency = 5000\n")},
                  "--profiling-frequency: Value 5000 not in range 1 to 1000 (config file " +
                      file("agent.conf") + ", line 3)");
  expect_rejected({"-o", "/x", "--config", file("missing.conf")}, "missing.conf");
}

// --api-server and --server-host take several URLs, comma-separated, from every source: the
// agent fails over between them in that order.
class ServerLists : public AgentConfigTest {
 protected:
  static constexpr const char* kList = "https://a.example:8443,https://b.example:8443";
  static std::vector<std::string> urls(const std::string& list, const char* flag) {
    auto split = split_server_urls(list, flag);
    EXPECT_TRUE(split.ok()) << split.error().message();
    return split.ok() ? *split : std::vector<std::string>{};
  }
  static std::vector<std::string> expected() {
    return {"https://a.example:8443", "https://b.example:8443"};
  }
  // Enough other flags for heartbeat mode.
  static std::vector<std::string> heartbeat_args(std::vector<std::string> more) {
    std::vector<std::string> args = {"--enable-heartbeat-server", "--service-name", "web",
                                     "--token", "t"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
};

TEST_F(ServerLists, FromTheCommandLine) {
  Outcome outcome = parse(heartbeat_args({"--api-server", kList}));
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->api_server, kList) << "the string stays for its other readers";
  EXPECT_EQ(urls(outcome.config->api_server, "--api-server"), expected());
  EXPECT_EQ(urls(outcome.config->upload_server(), "--server-host"), expected())
      << "uploads default to the same list";
  // Blanks around the commas, and the flag given twice, make the same list.
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--api-server",
                                 " https://a.example:8443 , https://b.example:8443"},
        std::vector<std::string>{"--api-server", "https://a.example:8443", "--api-server",
                                 "https://b.example:8443"}}) {
    outcome = parse(heartbeat_args(args));
    ASSERT_TRUE(outcome.config) << outcome.text;
    EXPECT_EQ(urls(outcome.config->api_server, "--api-server"), expected());
  }
  outcome = parse(heartbeat_args({"--api-server", "https://ctl", "--server-host", kList}));
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(urls(outcome.config->upload_server(), "--server-host"), expected());
}

TEST_F(ServerLists, FromTheEnvironmentAndAConfigFile) {
  {
    ScopedEnv env;
    env.set("DORMANT_API_SERVER", kList);
    Outcome outcome = parse(heartbeat_args({}));
    ASSERT_TRUE(outcome.config) << outcome.text;
    EXPECT_EQ(urls(outcome.config->api_server, "--api-server"), expected());
  }
  for (std::string line :
       {std::string("api-server = ") + kList, std::string("api-server = \"") + kList + "\"",
        std::string("api-server = https://a.example:8443 , https://b.example:8443"),
        std::string("api-server = [\"https://a.example:8443\", "
                    "\"https://b.example:8443\"]")}) {
    Outcome outcome = parse(heartbeat_args({"--config", write_config(line + "\n")}));
    ASSERT_TRUE(outcome.config) << line << ": " << outcome.text;
    EXPECT_EQ(urls(outcome.config->api_server, "--api-server"), expected()) << line;
  }
}

TEST_F(ServerLists, AnEmptyElementOrABadSchemeIsRejected) {
  for (const char* list : {"https://a.example,,https://b.example", "https://a.example,",
                           ",https://a.example", "https://a.example, ,https://b.example"}) {
    expect_rejected(heartbeat_args({"--api-server", list}), "--api-server: empty URL in '");
    expect_rejected(heartbeat_args({"--api-server", "https://ctl", "--server-host", list}),
                    "--server-host: empty URL in '");
  }
  expect_rejected(heartbeat_args({"--api-server", "https://a.example,b.example:8443"}),
                  "--api-server must be an http:// or https:// URL (got 'b.example:8443')");
  expect_rejected(heartbeat_args({"--api-server", "https://ctl", "--server-host",
                                  "ftp://up.example,https://up.example"}),
                  "--server-host must be an http:// or https:// URL (got 'ftp://up.example')");
  {
    ScopedEnv env;
    env.set("DORMANT_API_SERVER", "https://a.example,,https://b.example");
    expect_rejected(heartbeat_args({}), "--api-server: empty URL in '");
  }
  expect_rejected(heartbeat_args({"--config", write_config("api-server = https://a.example,,"
                                                           "https://b.example\n")}),
                  "--api-server: empty URL in '");
  expect_rejected(heartbeat_args({"--config", write_config("api-server = https://a.example,"
                                                           "studio:8443\n")}),
                  "--api-server must be an http:// or https:// URL (got 'studio:8443')");
}

// Issue 22, agent 9: the token never crosses a network in the clear unless the operator says so.
TEST_F(ServerLists, PlainHttpBeyondThisMachineNeedsAllowInsecureHttp) {
  for (const char* url :
       {"http://studio.example", "http://10.0.0.5:8080/studio", "http://127.0.0.1.evil.example",
        "http://[2001:db8::1]:80", "http://128.0.0.1"}) {
    expect_rejected(heartbeat_args({"--api-server", url}),
                    std::string("--api-server: ") + url + " would send the token");
    expect_rejected(heartbeat_args({"--api-server", "https://ctl", "--server-host",
                                    std::string("https://a,") + url}),
                    "--server-host: ");
    Outcome allowed = parse(heartbeat_args({"--api-server", url, "--allow-insecure-http"}));
    EXPECT_TRUE(allowed.config) << url << ": " << allowed.text;
  }
  for (const char* url : {"http://localhost:8443", "http://127.0.0.1", "http://127.1.2.3:80/x",
                          "http://[::1]:8443", "https://studio.example"}) {
    Outcome outcome = parse(heartbeat_args({"--api-server", url}));
    EXPECT_TRUE(outcome.config) << url << ": " << outcome.text;
  }
}

TEST_F(AgentConfigTest, HelpGroupsTheFlagsAndVersionPrintsIt) {
  Outcome help = parse({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* expected :
       {"Heartbeat, server connection and TLS:", "Output and upload:", "Profiling:", "perf:",
        "Guard rails:", "--enable-heartbeat-server", "--perf-dwarf-stack-size",
        "--skip-system-profilers-above", "DORMANT_PROFILING_FREQUENCY",
        "Paths, timeouts and tests:", "--host-lock", "--perf-path", "--profiler-module"}) {
    EXPECT_NE(help.text.find(expected), std::string::npos) << expected;
  }
  Outcome version = parse({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.text, "dormant-agent " DORMANT_VERSION "\n");
}

TEST(AgentBinary, InvalidFlagExitsWithCodeTwoAndOneClearMessage) {
  auto output = run_command({DORMANT_AGENT, "-o", "/tmp/x", "-f", "5000"},
                            deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(output.ok()) << output.error().message();
  EXPECT_EQ(output->status.code, 2);
  EXPECT_EQ(output->stderr_text,
            "dormant-agent: --profiling-frequency: Value 5000 not in range 1 to 1000\n"
            "Run 'dormant-agent --help' for the list of flags.\n");
  auto version =
      run_command({DORMANT_AGENT, "--version"}, deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(version->status.code, 0);
  EXPECT_EQ(version->stdout_text, "dormant-agent " DORMANT_VERSION "\n");
}

TEST_F(AgentConfigTest, AMisspelledFlagIsAnsweredWithTheNearestOne) {
  Outcome typo = parse({"--heartbeat-intervl", "5", "--servce-name=web", "--zzz"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.text.find("(--heartbeat-intervl: did you mean --heartbeat-interval?)"),
            std::string::npos)
      << typo.text;
  EXPECT_NE(typo.text.find("(--servce-name=web: did you mean --service-name?)"), std::string::npos)
      << typo.text;
  EXPECT_EQ(typo.text.find("--zzz: did you mean"), std::string::npos) << typo.text;
}

// Issue 43: an -o another user may write to was refused only when the first profile was
// written, after the whole run; it is refused before profiling starts.
TEST(AgentBinary, AnUnsafeOutputDirectoryIsRefusedBeforeProfiling) {
  auto directory =
      std::filesystem::temp_directory_path() / ("dormant-unsafe-o-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  std::filesystem::permissions(directory, std::filesystem::perms::all);
  auto output = run_command({DORMANT_AGENT, "-d", "3600", "-o", directory.string()},
                            deadline_after(std::chrono::seconds(60)));
  std::filesystem::remove_all(directory);
  ASSERT_TRUE(output.ok()) << output.error().message();
  EXPECT_EQ(output->status.code, 1);
  EXPECT_NE(output->stderr_text.find("-o: " + directory.string() +
                                     " may be written by its group or by others"),
            std::string::npos)
      << output->stderr_text;
  EXPECT_EQ(output->stderr_text.find("sampling"), std::string::npos) << output->stderr_text;
}

TEST(AgentBinary, AOneShotRunWhoseModuleCannotLoadSaysWhyAndFails) {
  auto output = run_command({DORMANT_AGENT, "-d", "1", "-o", "/tmp/dormant-unused",
                             "--profiler-module", "/nonexistent/libdormant_profilers.so"},
                            deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(output.ok()) << output.error().message();
  EXPECT_EQ(output->status.code, 1);
  EXPECT_NE(output->stderr_text.find("cannot load the profiler module "
                                     "/nonexistent/libdormant_profilers.so"),
            std::string::npos)
      << output->stderr_text;
  EXPECT_NE(output->stderr_text.find("cannot open shared object file"), std::string::npos);
}

// Issue 22, agent 8: a token in argv is readable by every local user, and the agent says so.
TEST(TokenOnTheCommandLine, OnlyArgvCounts) {
  auto on_command_line = [](std::vector<const char*> args) {
    args.insert(args.begin(), "dormant-agent");
    return token_on_command_line(static_cast<int>(args.size()), args.data());
  };
  EXPECT_TRUE(on_command_line({"--token", "t"}));
  EXPECT_TRUE(on_command_line({"-o", "/x", "--token=t"}));
  EXPECT_FALSE(on_command_line({"--token-file", "/etc/dormant/token"}));
  EXPECT_FALSE(on_command_line({"gpu", "--", "./app", "--token", "app's own"}));
  EXPECT_FALSE(on_command_line({}));
}

TEST(AgentBinary, ATokenInArgvIsWarnedAbout) {
  auto output = run_command({DORMANT_AGENT, "-d", "1", "-o", "/tmp/dormant-unused", "--token",
                             "argv-token-0123456789", "--profiler-module", "/nonexistent/x.so"},
                            deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(output.ok()) << output.error().message();
  EXPECT_NE(output->stderr_text.find("the token is on the command line"), std::string::npos)
      << output->stderr_text;
  EXPECT_EQ(output->stderr_text.find("argv-token-0123456789"), std::string::npos);
}

class TokenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ =
        std::filesystem::temp_directory_path() / ("dormant-token-" + std::to_string(::getpid()));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  void write(const std::string& text, std::filesystem::perms perms) {
    std::ofstream(path_) << text;
    std::filesystem::permissions(path_, perms);
  }
  Outcome parse_with_file() {
    return parse({"--enable-heartbeat-server", "--api-server", "https://x", "--service-name", "s",
                  "--token-file", path_.string()});
  }
  std::filesystem::path path_;
};

// Issue 22, agent 8: a --config file may hold the token; one that group or others may read or
// write is refused, whether named on the command line or in DORMANT_CONFIG. (Its group is
// nobody's here: root's file that the agent's own group may read is the next test's.)
TEST_F(AgentConfigTest, AConfigFileGroupOrOthersMayReadIsRefused) {
  for (auto [mode, text] :
       {std::pair{fs::perms::group_read, "0640"}, std::pair{fs::perms::others_read, "0604"},
        std::pair{fs::perms::group_write, "0620"}}) {
    std::string path = write_config("token = s3cret\nprofiling-frequency = 7\n");
    fs::permissions(path, mode, fs::perm_options::add);
    if (::geteuid() == 0) {
      ASSERT_EQ(::chown(path.c_str(), 0, kNobodysGroup), 0);
    }
    expect_rejected({"-o", "/x", "--config", path},
                    "--config " + path + ": group or others may read it (mode " + text +
                        "); chmod 600 it, or make it root's and readable by the agent's group "
                        "alone (chown root:GROUP, chmod 640)");
    ScopedEnv env;
    env.set("DORMANT_CONFIG", path);
    expect_rejected({"-o", "/x"}, "--config " + path + ": group or others may read it");
  }
  std::string path = write_config("token = s3cret\nprofiling-frequency = 7\n");
  Outcome outcome = parse({"-o", "/x", "--config", path});
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->frequency_hz, 7);
}

// Issue 40: the package makes agent.conf root's and readable by the agent's group, so that the
// agent cannot rewrite its own settings (its module and perf paths); that file is taken, one its
// group may also write, or of another group, or not root's, is not.
TEST_F(AgentConfigTest, RootsConfigFileTheAgentsGroupMayReadIsTaken) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the file must be root's";
  std::string path = write_config("profiling-frequency = 7\n");
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_EQ(::chown(path.c_str(), 0, ::getegid()), 0);
  Outcome taken = parse({"-o", "/x", "--config", path});
  ASSERT_TRUE(taken.config) << taken.text;
  EXPECT_EQ(taken.config->frequency_hz, 7);
  fs::permissions(path, fs::perms::group_write, fs::perm_options::add);
  expect_rejected({"-o", "/x", "--config", path}, "group or others may read it (mode 0660)");
  fs::permissions(path, fs::perms::group_write, fs::perm_options::remove);
  ASSERT_EQ(::chown(path.c_str(), 0, kNobodysGroup), 0);
  expect_rejected({"-o", "/x", "--config", path}, "group or others may read it (mode 0640)");
  ASSERT_EQ(::chown(path.c_str(), kNobodysGroup, ::getegid()), 0);
  expect_rejected({"-o", "/x", "--config", path}, "group or others may read it (mode 0640)");
}

TEST_F(TokenFileTest, TheFirstLineIsTheToken) {
  using std::filesystem::perms;
  write("  s3cret \nsecond line\n", perms::owner_read | perms::owner_write);
  Outcome outcome = parse_with_file();
  ASSERT_TRUE(outcome.config) << outcome.text;
  EXPECT_EQ(outcome.config->token, "s3cret");
}

TEST_F(TokenFileTest, AFileOthersMayReadOrWithoutATokenIsRefused) {
  using std::filesystem::perms;
  write("s3cret\n", perms::owner_read | perms::owner_write | perms::group_read);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(path_.c_str(), 0, kNobodysGroup), 0);
  }
  Outcome readable = parse_with_file();
  EXPECT_FALSE(readable.config);
  EXPECT_NE(readable.text.find("group or others may read it (mode 0640); chmod 600 it"),
            std::string::npos)
      << readable.text;
  write(" \n", perms::owner_read);
  Outcome empty = parse_with_file();
  EXPECT_FALSE(empty.config);
  EXPECT_NE(empty.text.find("holds no token"), std::string::npos) << empty.text;
  Outcome both = parse({"--token", "t", "--token-file", path_.string(), "-o", "/tmp/x"});
  EXPECT_FALSE(both.config) << "one or the other";
}

}  // namespace
}  // namespace dormant::config
