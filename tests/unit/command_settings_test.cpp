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

}  // namespace
}  // namespace dormant::agent
