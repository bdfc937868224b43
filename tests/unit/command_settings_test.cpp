#include "agent/command_settings.h"

#include <gtest/gtest.h>

namespace dormant::agent {
namespace {

config::AgentConfig agent_flags() {
  config::AgentConfig agent;
  agent.output_dir = "/tmp/out";
  return agent;
}

CpuProfilers profilers_for(const wire::CommandConfig& command,
                           config::AgentConfig agent = agent_flags()) {
  auto plan = plan_for_command(agent, command);
  EXPECT_TRUE(plan.ok()) << plan.error().message();
  return plan.ok() ? plan->profiling.cpu : CpuProfilers::kNone;
}

TEST(CommandSettings, TheCommandsPerfAndEbpfEntriesChooseTheSystemProfiler) {
  wire::CommandConfig command;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpfElsePerf) << "the agent's flags apply";

  command.ebpf = wire::EbpfSetting::kEnabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpf);
  config::AgentConfig dwarf = agent_flags();
  dwarf.perf_mode = config::PerfMode::kDwarf;
  EXPECT_EQ(profilers_for(command, dwarf), CpuProfilers::kEbpf) << "the command asked for eBPF";

  command.ebpf = wire::EbpfSetting::kDisabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kPerf);

  command.ebpf.reset();
  command.perf = wire::PerfConfig{wire::PerfSetting::kDisabled, {}};
  EXPECT_EQ(profilers_for(command), CpuProfilers::kNone) << "Studio's perf off: no system profiler";
  command.ebpf = wire::EbpfSetting::kEnabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpf);
}

TEST(CommandSettings, TheCommandsGpuEntryChoosesTheGpuMode) {
  wire::CommandConfig command;
  auto plan = plan_for_command(agent_flags(), command);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->profiling.gpu.enabled) << "merge, the flag's default";
  EXPECT_EQ(plan->profiling.cpu, CpuProfilers::kEbpfElsePerf);

  command.gpu = GpuMode::kGpuOnly;
  plan = plan_for_command(agent_flags(), command);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->profiling.gpu.enabled);
  EXPECT_EQ(plan->profiling.cpu, CpuProfilers::kNone);

  for (auto off : {GpuMode::kCpuOnly, GpuMode::kDisabled}) {
    command.gpu = off;
    plan = plan_for_command(agent_flags(), command);
    ASSERT_TRUE(plan.ok());
    EXPECT_FALSE(plan->profiling.gpu.enabled);
    EXPECT_EQ(plan->profiling.cpu, CpuProfilers::kEbpfElsePerf);
  }
  config::AgentConfig gpu_off = agent_flags();
  gpu_off.gpu_mode = GpuMode::kDisabled;
  command.gpu = GpuMode::kMerge;
  plan = plan_for_command(gpu_off, command);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->profiling.gpu.enabled) << "the command's entry over the flag";
}

TEST(CommandSettings, TheCommandsPerfEventsReplaceTheFlags) {
  config::AgentConfig agent = agent_flags();
  agent.perf_events = {"instructions"};
  wire::CommandConfig command;
  auto plan = plan_for_command(agent, command);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->profiling.perf.events, std::vector<std::string>{"instructions"})
      << "a command without a perf entry keeps the flags'";

  command.perf =
      wire::PerfConfig{wire::PerfSetting::kEnabledAggressive, {"cache-misses", "cycles"}};
  plan = plan_for_command(agent, command);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->profiling.perf.events, (std::vector<std::string>{"cache-misses", "cycles"}));
  EXPECT_EQ(plan->run_arguments["perf_events"], nlohmann::json({"cache-misses", "cycles"}));
}

TEST(CommandSettings, ThePlanHoldsTheCommandOverTheFlagsAndNothingOfTheServer) {
  config::AgentConfig agent = agent_flags();
  agent.token = "secret-token";
  agent.tls_client_cert = "/etc/dormant/client.pem";
  agent.tls_client_key = "/etc/dormant/client.key";
  agent.frequency_hz = 99;
  wire::CommandConfig command;
  command.duration = 30;
  command.frequency = 49;
  command.continuous = true;
  command.pids = {7, 9};
  auto plan = plan_for_command(agent, command);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->snapshot_every, std::chrono::seconds(30));
  EXPECT_EQ(plan->profiling.target.frequency_hz, 49);
  EXPECT_TRUE(plan->continuous);
  EXPECT_EQ(plan->profiling.target.pids, (std::vector<int>{7, 9}));
  EXPECT_EQ(plan->output_dir, "/tmp/out");
  std::string headers = plan->run_arguments.dump();
  EXPECT_EQ(headers.find("secret-token"), std::string::npos) << headers;
  EXPECT_EQ(headers.find("/etc/dormant"), std::string::npos) << headers;
}

// The flags reach the module as the sections its profilers take (ProfilingSettings), each value
// where that profiler reads it.
TEST(SessionPlan, EachFlagLandsInItsSectionOfTheProfilingSettings) {
  config::AgentConfig agent = agent_flags();
  agent.frequency_hz = 49;
  agent.pids = {3, 5};
  agent.skip_system_profilers_above = 900;
  agent.perf_use_cgroups = true;
  agent.perf_max_cgroups = 7;
  agent.perf_max_docker_containers = 4;
  agent.perf_path = "/opt/perf";
  agent.perf_mode = config::PerfMode::kSmart;
  agent.perf_dwarf_stack_size = 4096;
  agent.perf_restart_interval_s = 120;
  agent.perf_restart_rss_mb = 300;
  agent.perf_script_timeout_s = 60;
  agent.ebpf_stack_map_entries = 1024;
  agent.ebpf_count_map_entries = 2048;
  agent.ebpf_process_map_entries = 512;
  agent.ebpf_unwind_tables = false;
  agent.ebpf_unwind_table_mb = 8;
  agent.gpu_mode = GpuMode::kGpuOnly;
  agent.gpu_start_timeout_s = 1.5;
  agent.gpu_max_records_per_second = 1000;
  agent.gpu_kernel_name_bytes = 256;
  const ProfilingSettings settings = plan_session(agent).profiling;

  EXPECT_EQ(settings.cpu, CpuProfilers::kNone) << "gpu-only";
  EXPECT_EQ(settings.target.frequency_hz, 49);
  EXPECT_EQ(settings.target.pids, (std::vector<int>{3, 5}));
  EXPECT_EQ(settings.target.skip_above_processes, 900);
  EXPECT_TRUE(settings.target.use_cgroups);
  EXPECT_EQ(settings.target.max_cgroups, 7);
  EXPECT_EQ(settings.target.max_docker_containers, 4);
  EXPECT_EQ(settings.perf.path, "/opt/perf");
  EXPECT_EQ(settings.perf.call_graph, CallGraph::kSmart);
  EXPECT_EQ(settings.perf.dwarf_stack_size, 4096);
  EXPECT_EQ(settings.perf.restart_after, std::chrono::seconds(120));
  EXPECT_EQ(settings.perf.restart_above_rss_bytes, uint64_t{300} << 20);
  EXPECT_EQ(settings.perf.script_timeout, std::chrono::seconds(60));
  EXPECT_EQ(settings.ebpf.max_stacks, 1024u);
  EXPECT_EQ(settings.ebpf.max_counted, 2048u);
  EXPECT_EQ(settings.ebpf.max_processes, 512u);
  EXPECT_FALSE(settings.ebpf.walk_by_tables);
  EXPECT_EQ(settings.ebpf.unwind_table_bytes, uint64_t{8} << 20);
  EXPECT_TRUE(settings.gpu.enabled);
  EXPECT_EQ(settings.gpu.start_deadline, std::chrono::milliseconds(1500));
  EXPECT_EQ(settings.gpu.records_per_second, 1000u);
  EXPECT_EQ(settings.gpu.kernel_name_bytes, 256u);
  EXPECT_FALSE(settings.work_dir.empty());
}

}  // namespace
}  // namespace dormant::agent
