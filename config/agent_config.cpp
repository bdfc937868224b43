#include "config/agent_config.h"

#include <algorithm>
#include <charconv>
#include <climits>

#include "common/perf_events.h"
#include "common/profiling_limits.h"
#include "common/text.h"
#include "config/cli.h"
#include "config/secret_file.h"
#include "config/server_urls.h"
#include "config/token_file.h"

namespace dormant::config {
namespace {

constexpr const char* kConnection = "Heartbeat, server connection and TLS";
constexpr const char* kOutput = "Output and upload";
constexpr const char* kProfiling = "Profiling";
constexpr const char* kPerf = "perf";
constexpr const char* kEbpf = "eBPF";
constexpr const char* kGpu = "GPU";
constexpr const char* kGuardRails = "Guard rails";
constexpr const char* kGeneral = "General";
constexpr const char* kPaths = "Paths, timeouts and tests";

constexpr int kMaxFrequencyWithDwarf = 100;
constexpr int kMaxDwarfStackSize = 65528;  // perf's own limit

Result<std::vector<int>> parse_pids(const std::vector<std::string>& texts) {
  std::vector<int> pids;
  for (const std::string& text : texts) {
    int pid = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || pid <= 0) {
      return Error::invalid_argument("--pids: '" + text +
                                     "' is not a process id (expected positive integers, "
                                     "comma-separated: --pids 1234,5678)");
    }
    pids.push_back(pid);
  }
  return pids;
}

// gProfiler's names, in the order given, without duplicates ("cpu-cycles" is "cycles").
Result<std::vector<std::string>> parse_perf_events(const std::vector<std::string>& texts) {
  std::vector<std::string> events;
  for (const std::string& text : texts) {
    auto name = perf_event_name(text);
    if (!name) {
      return Error::invalid_argument("--perf-events: '" + text +
                                     "' is not a supported perf event (" +
                                     supported_perf_event_names() + ")");
    }
    if (std::ranges::find(events, *name) == events.end()) events.emplace_back(*name);
  }
  if (events.empty()) return Error::invalid_argument("--perf-events: name at least one event");
  return events;
}

// Flags whose text is converted after parsing.
struct FlagTexts {
  std::vector<std::string> pids;
  std::string mode = "cpu";
  std::string perf_mode = "fp";
  std::vector<std::string> perf_events = {"cycles"};
  std::string system_profiler = "auto";
  std::string gpu_mode = "merge";
  std::string ebpf_unwind = "tables";
  // One value per --api-server or --server-host, or the elements of a config file's list; joined
  // with commas into the config and split again by split_server_urls.
  std::vector<std::string> api_server;
  std::vector<std::string> server_host;
};

SystemProfiler system_profiler_from(const std::string& text) {
  if (text == "ebpf") return SystemProfiler::kEbpf;
  if (text == "perf") return SystemProfiler::kPerf;
  if (text == "disabled") return SystemProfiler::kDisabled;
  return SystemProfiler::kAuto;
}

PerfMode perf_mode_from(const std::string& text) {
  if (text == "dwarf") return PerfMode::kDwarf;
  if (text == "smart") return PerfMode::kSmart;
  if (text == "disabled" || text == "none") return PerfMode::kDisabled;
  return PerfMode::kFp;
}

void define_options(CLI::App& app, AgentConfig& c, FlagTexts& texts) {
  app.set_version_flag("--version", "dormant-agent " DORMANT_VERSION);
  add_config_file_option(app, kGeneral);
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error or critical")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "critical"}))
      ->group(kGeneral);

  app.add_flag("--enable-heartbeat-server", c.enable_heartbeat_server,
               "Idle until the control server sends a start command (needs --api-server, "
               "--service-name, --token)")
      ->group(kConnection);
  // Lists, but no CLI11 delimiter: it would drop an empty element ("a,,b") without a word.
  app.add_option("--api-server", texts.api_server,
                 "Base URL of the control server (heartbeats, command completions); several, "
                 "comma-separated, to fail over between them in that order")
      ->allow_extra_args(false)
      ->group(kConnection);
  app.add_option("--server-host", texts.server_host,
                 "Base URL for profile uploads, or several, comma-separated (default: the "
                 "--api-server URLs)")
      ->allow_extra_args(false)
      ->group(kConnection);
  app.add_option("--heartbeat-interval", c.heartbeat_interval_s,
                 "Seconds between heartbeats (0.1 to 86400)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0))
      ->group(kConnection);
  add_int(app, "--server-upload-timeout", c.server_upload_timeout_s, 1, 3600,
          "Seconds an upload may take", kConnection);
  auto* token =
      app.add_option("--token", c.token,
                     "API token (Bearer on heartbeats, GPROFILER-API-KEY on uploads); every local "
                     "user can read a command line: prefer --token-file or DORMANT_TOKEN")
          ->group(kConnection);
  app.add_option("--token-file", c.token_file,
                 "File whose first line is the API token (not readable by group or others)")
      ->excludes(token)
      ->group(kConnection);
  app.add_option("--service-name", c.service_name, "Service this host belongs to")
      ->group(kConnection);
  app.add_flag("--allow-insecure-http", c.allow_insecure_http,
               "Allow an http:// server that is not this machine (the token and profiles then "
               "cross the network in the clear)")
      ->group(kConnection);
  app.add_flag("--no-verify", c.no_verify, "Do not verify the server's TLS certificate")
      ->group(kConnection);
  app.add_option("--tls-ca-bundle", c.tls_ca_bundle, "CA certificates to verify the server with")
      ->check(CLI::ExistingFile)
      ->group(kConnection);
  app.add_option("--tls-client-cert", c.tls_client_cert, "Client certificate for mutual TLS")
      ->check(CLI::ExistingFile)
      ->group(kConnection);
  app.add_option("--tls-client-key", c.tls_client_key, "Private key of --tls-client-cert")
      ->check(CLI::ExistingFile)
      ->group(kConnection);
  app.add_option("--state-dir", c.state_dir,
                 "Where the command journal and the upload spool are kept")
      ->capture_default_str()
      ->group(kConnection);
  add_int(app, "--spool-max-mb", c.spool_max_mb, 1, 1 << 20,
          "Profiles waiting for upload keep at most this many MB in --state-dir", kConnection);
  add_int(app, "--spool-max-files", c.spool_max_files, 1, 1 << 24,
          "At most this many profiles wait for upload in --state-dir; past it the oldest go",
          kConnection);
  add_int(app, "--heartbeat-perf-restricted-max-processes",
          c.heartbeat_perf_restricted_max_processes, 0, INT_MAX,
          "Skip perf above this many processes when a command says perf: enabled_restricted",
          kConnection);
  add_int(app, "--heartbeat-perf-restricted-max-containers",
          c.heartbeat_perf_restricted_max_containers, 0, INT_MAX,
          "--perf-max-docker-containers for perf: enabled_restricted", kConnection);
  add_int(app, "--heartbeat-perf-aggressive-max-processes",
          c.heartbeat_perf_aggressive_max_processes, 0, INT_MAX,
          "Skip perf above this many processes when a command says perf: enabled_aggressive",
          kConnection);
  add_int(app, "--heartbeat-perf-aggressive-max-containers",
          c.heartbeat_perf_aggressive_max_containers, 0, INT_MAX,
          "--perf-max-docker-containers for perf: enabled_aggressive", kConnection);
  app.add_option("--inventory-interval", c.inventory_interval_s,
                 "Seconds between two readings of which containers, pods and processes run here, "
                 "sent in every heartbeat (0: none sent)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0))
      ->group(kConnection);
  app.add_option("--heartbeat-workload-name-labels", c.workload_name_labels,
                 "Pod or container labels that name a workload, tried before "
                 "app.kubernetes.io/name, app.kubernetes.io/instance, app and k8s-app")
      ->delimiter(',')
      ->group(kConnection);
  app.add_option("--heartbeat-workload-kind-labels", c.workload_kind_labels,
                 "Pod or container labels that give a workload's kind, tried before the pod "
                 "name's shape")
      ->delimiter(',')
      ->group(kConnection);

  app.add_option("-o,--output-dir", c.output_dir, "Write profiles and flamegraphs here")
      ->group(kOutput);
  app.add_flag("-u,--upload-results", c.upload_results, "Upload profiles to --server-host")
      ->group(kOutput);
  app.add_option("--output-format", c.output_formats,
                 "What -o holds of each profile, any of collapsed, pprof (gzip'd profile.proto) "
                 "and svg, comma-separated (default: collapsed,svg)")
      ->delimiter(',')
      ->check(CLI::IsMember({"collapsed", "pprof", "svg"}))
      ->group(kOutput);
  app.add_flag("--flamegraph,!--no-flamegraph", c.flamegraph,
               "Render a flamegraph SVG beside each local profile (default: on)")
      ->group(kOutput);
  app.add_flag("--rotating-output", c.rotating_output, "Keep only the last profile in -o")
      ->group(kOutput);

  add_int(app, "-d,--profiling-duration", c.duration_s, 1, INT_MAX,
          "Seconds per profile (snapshot)", kProfiling);
  add_int(app, "-f,--profiling-frequency", c.frequency_hz, 1, kMaxFrequency,
          "Samples per second (at most 100 with --perf-mode dwarf or smart)", kProfiling);
  app.add_flag("-c,--continuous", c.continuous, "Profile until stopped, one profile every -d s")
      ->group(kProfiling);
  app.add_option("--pids", texts.pids, "Profile only these processes (comma-separated, repeatable)")
      ->delimiter(',')
      ->group(kProfiling);
  app.add_option("--mode", texts.mode, "cpu, allocation or none")
      ->capture_default_str()
      ->check(CLI::IsMember(
          std::vector<std::string>(kProfilingModeNames.begin(), kProfilingModeNames.end())))
      ->group(kProfiling);

  app.add_option("--system-profiler", texts.system_profiler,
                 "auto (eBPF where it loads, else perf), ebpf, perf or disabled")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "ebpf", "perf", "disabled"}))
      ->group(kProfiling);
  app.add_option("--perf-mode", texts.perf_mode,
                 "fp (frame pointers), dwarf, smart (both; the deeper stack wins), disabled")
      ->capture_default_str()
      ->check(CLI::IsMember({"fp", "dwarf", "smart", "disabled", "none"}))
      ->group(kPerf);
  app.add_option("--perf-events", texts.perf_events,
                 "PMU events perf may sample on, in order of preference (comma-separated): it "
                 "records the first this host counts; cycles falls back to cpu-clock")
      ->delimiter(',')
      ->capture_default_str()
      ->group(kPerf);
  add_int(app, "--perf-dwarf-stack-size", c.perf_dwarf_stack_size, 8, kMaxDwarfStackSize,
          "Bytes of stack perf copies per sample with dwarf unwinding", kPerf);
  app.add_flag("--perf-use-cgroups", c.perf_use_cgroups,
               "Profile the busiest cgroups instead of the whole host")
      ->group(kPerf);
  add_int(app, "--perf-max-cgroups", c.perf_max_cgroups, 0, INT_MAX,
          "How many cgroups --perf-use-cgroups profiles", kPerf);
  add_int(app, "--perf-max-docker-containers", c.perf_max_docker_containers, 0, INT_MAX,
          "With --perf-use-cgroups, profile this many docker containers individually", kPerf);

  app.add_option("--gpu-mode", texts.gpu_mode,
                 "GPU kernels and copies under the CPU stacks that launched them, of programs "
                 "that load libdormant_cupti.so: merge (beside CPU samples), gpu-only, cpu-only, "
                 "disabled")
      ->capture_default_str()
      ->check(CLI::IsMember({"merge", "gpu-only", "cpu-only", "disabled"}))
      ->group(kGpu);
  app.add_option("--gpu-start-timeout", c.gpu_start_timeout_s,
                 "Seconds the GPU profiler may take to attach when a session starts; past them "
                 "the session goes on without it")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0))
      ->group(kGpu);
  add_int(app, "--gpu-max-records-per-second", c.gpu_max_records_per_second, 0, INT_MAX,
          "GPU records (kernels, copies, sets) of one process read a second; past them only "
          "their time is kept, under the process (0: every record)",
          kGpu);
  add_int(app, "--gpu-kernel-name-bytes", c.gpu_kernel_name_bytes, 64, 65536,
          "Bytes of a kernel's (demangled) name kept in its frame; a longer one is cut and ends "
          "in '#' and a hash of the whole name, so that names never merge",
          kGpu);
  app.add_option("--cupti-library", c.cupti_library,
                 "The injection library `gpu --` starts programs with (default: "
                 "libdormant_cupti.so beside the executable)")
      ->group(kPaths);
  auto* gpu = app.add_subcommand(
      "gpu",
      "Start PROGRAM with libdormant_cupti.so injected (CUDA_INJECTION64_PATH) and profile it "
      "until it exits: dormant-agent gpu -o DIR [--gpu-mode M] -- PROGRAM ARGS...");
  gpu->fallthrough();
  gpu->add_option("program", c.launch_command, "The program and its arguments, after --")
      ->required();

  // A stack-map entry holds 127 frames (about 1 kB of kernel memory); there are two maps, user and
  // kernel, of this size each: 2^18 entries is 512 MB at most (all of it from the start
  // before 6.1).
  add_int(app, "--ebpf-stack-map-entries", c.ebpf_stack_map_entries, 64, 1 << 18,
          "Distinct user stacks, and as many kernel stacks, the eBPF sampler keeps per snapshot",
          kEbpf);
  add_int(app, "--ebpf-count-map-entries", c.ebpf_count_map_entries, 64, 1 << 20,
          "Distinct (process, user stack, kernel stack) the eBPF sampler counts per snapshot",
          kEbpf);
  add_int(app, "--ebpf-process-map-entries", c.ebpf_process_map_entries, 64, 1 << 20,
          "Processes the eBPF sampler tracks at once", kEbpf);
  app.add_option("--ebpf-unwind", texts.ebpf_unwind,
                 "How the eBPF sampler walks user stacks: tables (each binary's .eh_frame and "
                 ".debug_frame, loaded into the kernel; frame pointers where they have no row) "
                 "or fp (frame pointers only)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tables", "fp"}))
      ->group(kEbpf);
  add_int(app, "--ebpf-unwind-table-mb", c.ebpf_unwind_table_mb, 1, 4096,
          "Kernel memory the unwind tables may take; past it the least recently used binaries "
          "are walked by frame pointer",
          kEbpf);

  // What tests and unusual hosts need.
  app.add_option("--perf-path", c.perf_path, "The perf executable")->group(kPaths);
  add_int(app, "--perf-restart-interval", c.perf_restart_interval_s, 1, INT_MAX,
          "Restart perf record after this many seconds", kPaths);
  add_int(app, "--perf-restart-rss-mb", c.perf_restart_rss_mb, 1, INT_MAX,
          "Restart perf record when its RSS passes this many MB", kPaths);
  add_int(app, "--perf-script-timeout", c.perf_script_timeout_s, 1, INT_MAX,
          "Seconds perf script may take for one snapshot", kPaths);
  app.add_option("--profiler-stop-timeout", c.profiler_stop_timeout_s,
                 "Seconds a profiler's stop may take before its processes are killed")
      ->check(CLI::Range(0.1, 3600.0))
      ->group(kPaths);
  app.add_option("--host-lock", c.host_lock,
                 "The one-agent-per-host lock file (default /run/dormant/agent.lock)")
      ->group(kPaths);
  app.add_option("--profiler-module", c.profiler_module,
                 "The profiler module to load for sessions (default: libdormant_profilers.so "
                 "beside the executable)")
      ->group(kPaths);

  add_int(app, "--skip-system-profilers-above", c.skip_system_profilers_above, 0, INT_MAX,
          "Skip perf and eBPF when the host has more processes than this (0: never)", kGuardRails);
  add_int(app, "--max-processes-runtime-profiler", c.max_processes_runtime_profiler, 0, INT_MAX,
          "Walk the Python frames of at most this many processes at once, the first sampled; "
          "the others keep their native frames (0: all)",
          kGuardRails);
  add_int(app, "--python-skip-pyperf-profiler-above", c.python_skip_pyperf_profiler_above, 0,
          INT_MAX,
          "Python processes past this many keep their native frames only (0: no limit; with "
          "--max-processes-runtime-profiler, the lower holds)",
          kGuardRails);
}

}  // namespace

std::string_view to_string(PerfMode mode) {
  switch (mode) {
    case PerfMode::kFp:
      return "fp";
    case PerfMode::kDwarf:
      return "dwarf";
    case PerfMode::kSmart:
      return "smart";
    case PerfMode::kDisabled:
      return "disabled";
  }
  return "?";
}

std::string_view to_string(SystemProfiler profiler) {
  switch (profiler) {
    case SystemProfiler::kAuto:
      return "auto";
    case SystemProfiler::kEbpf:
      return "ebpf";
    case SystemProfiler::kPerf:
      return "perf";
    case SystemProfiler::kDisabled:
      return "disabled";
  }
  return "?";
}

CpuProfilers cpu_profilers(const AgentConfig& c) {
  if (c.mode != ProfilingMode::kCpu) return CpuProfilers::kNone;
  bool perf_only = c.perf_mode == PerfMode::kDwarf || c.perf_mode == PerfMode::kSmart;
  bool perf_off = c.perf_mode == PerfMode::kDisabled;
  switch (c.system_profiler) {
    case SystemProfiler::kEbpf:
      return CpuProfilers::kEbpf;
    case SystemProfiler::kPerf:
      return perf_off ? CpuProfilers::kNone : CpuProfilers::kPerf;
    case SystemProfiler::kDisabled:
      return CpuProfilers::kNone;
    case SystemProfiler::kAuto:
      break;
  }
  if (perf_off) return CpuProfilers::kNone;
  if (perf_only) return CpuProfilers::kPerf;
  return CpuProfilers::kEbpfElsePerf;
}

Result<void> validate(const AgentConfig& c) {
  auto invalid = [](std::string message) { return Error::invalid_argument(std::move(message)); };
  if (c.frequency_hz < 1 || c.frequency_hz > kMaxFrequency) {
    return invalid("-f/--profiling-frequency must be 1-" + std::to_string(kMaxFrequency) +
                   " (got " + std::to_string(c.frequency_hz) + ")");
  }
  bool dwarf = c.perf_mode == PerfMode::kDwarf || c.perf_mode == PerfMode::kSmart;
  if (dwarf && c.frequency_hz > kMaxFrequencyWithDwarf) {
    return invalid("-f/--profiling-frequency must be 1-100 with --perf-mode " +
                   std::string(to_string(c.perf_mode)) + " (got " + std::to_string(c.frequency_hz) +
                   ")");
  }
  if (dwarf && c.system_profiler == SystemProfiler::kEbpf) {
    return invalid("--perf-mode " + std::string(to_string(c.perf_mode)) +
                   " is how perf unwinds: it needs --system-profiler perf or auto (the eBPF "
                   "sampler unwinds by its own tables: --ebpf-unwind)");
  }
#if !DORMANT_WITH_EBPF
  if (c.system_profiler == SystemProfiler::kEbpf) {
    return invalid("--system-profiler ebpf: this dormant-agent was built without eBPF");
  }
  if (c.gpu_mode == GpuMode::kGpuOnly) {
    return invalid(
        "--gpu-mode gpu-only: this dormant-agent was built without eBPF, which the GPU "
        "profiler's probes need");
  }
#endif
  if (c.duration_s < 1) return invalid("-d/--profiling-duration must be at least 1 second");
  if (c.perf_dwarf_stack_size < 8 || c.perf_dwarf_stack_size > kMaxDwarfStackSize) {
    return invalid("--perf-dwarf-stack-size must be 8-65528 bytes (got " +
                   std::to_string(c.perf_dwarf_stack_size) + ")");
  }
  for (int pid : c.pids) {
    if (pid <= 0) return invalid("--pids: " + std::to_string(pid) + " is not a process id");
  }
  if (!c.launch_command.empty() && (c.enable_heartbeat_server || c.continuous)) {
    return invalid("gpu -- PROGRAM profiles one program to its end: not with " +
                   std::string(c.enable_heartbeat_server ? "--enable-heartbeat-server" : "-c"));
  }
  if (c.enable_heartbeat_server) {
    if (c.api_server.empty()) {
      return invalid("--enable-heartbeat-server needs --api-server (the control server's URL)");
    }
    if (c.service_name.empty()) return invalid("--enable-heartbeat-server needs --service-name");
    if (c.token.empty()) return invalid("--enable-heartbeat-server needs --token");
  } else if (c.output_dir.empty() && !c.upload_results) {
    return invalid("nothing would be kept: give -o/--output-dir DIR, -u/--upload-results or both");
  }
  if (c.upload_results) {
    if (c.upload_server().empty()) return invalid("-u/--upload-results needs --server-host");
    if (c.token.empty()) return invalid("-u/--upload-results needs --token");
    if (c.service_name.empty()) return invalid("-u/--upload-results needs --service-name");
  }
  for (const auto& [list, flag] :
       {std::pair{&c.api_server, "--api-server"}, std::pair{&c.server_host, "--server-host"}}) {
    auto urls = split_server_urls(*list, flag);
    if (!urls) return urls.error();
    for (const std::string& url : *urls) {
      if (is_plain_http_beyond_loopback(url) && !c.allow_insecure_http) {
        return invalid(std::string(flag) + ": " + url +
                       " would send the token and every profile in the clear: use https://, "
                       "or --allow-insecure-http if the network is yours alone");
      }
    }
  }
  if (c.tls_client_cert.empty() != c.tls_client_key.empty()) {
    return invalid("--tls-client-cert and --tls-client-key go together: give both or neither");
  }
  return ok();
}

bool token_on_command_line(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") return false;  // the arguments of gpu -- PROGRAM
    if (arg == "--token" || arg.starts_with("--token=")) return true;
  }
  return false;
}

std::variant<AgentConfig, ExitRequest> parse_agent_args(int argc, const char* const* argv) {
  AgentConfig config;
  FlagTexts texts;
  CLI::App app("Dormant: a profiling agent that idles until its control server says start.",
               "dormant-agent");
  app.get_formatter()->column_width(44);
  define_options(app, config, texts);
  if (auto exit = parse_command_line(app, argc, argv)) return *exit;
  if (std::string file = app.get_config_ptr()->as<std::string>(); !file.empty()) {
    if (auto private_file = check_config_file(file); !private_file) {
      return usage_error(app, private_file.error().message());
    }
  }

  config.mode = parse_profiling_mode(texts.mode).value_or(ProfilingMode::kCpu);
  config.perf_mode = perf_mode_from(texts.perf_mode);
  config.system_profiler = system_profiler_from(texts.system_profiler);
  config.gpu_mode = enum_from_string<GpuMode>(texts.gpu_mode).value_or(GpuMode::kMerge);
  config.ebpf_unwind_tables = texts.ebpf_unwind == "tables";
  config.api_server = join(texts.api_server, ",");
  config.server_host = join(texts.server_host, ",");
  auto pids = parse_pids(texts.pids);
  if (!pids) return usage_error(app, pids.error().message());
  config.pids = std::move(*pids);
  auto perf_events = parse_perf_events(texts.perf_events);
  if (!perf_events) return usage_error(app, perf_events.error().message());
  config.perf_events = std::move(*perf_events);
  if (config.log_level == "warning") config.log_level = "warn";
  if (!config.token_file.empty()) {
    auto token = read_token_file(config.token_file);
    if (!token) return usage_error(app, token.error().message());
    config.token = std::move(*token);
  }
  if (auto valid = validate(config); !valid) {
    return usage_error(app, valid.error().message());
  }
  return config;
}

}  // namespace dormant::config
