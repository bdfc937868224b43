#include "agent/command_settings.h"

#include <gtest/gtest.h>

namespace dormant::agent {
namespace {

using config::CpuProfilers;

config::AgentConfig agent_flags() {
  config::AgentConfig agent;
  agent.output_dir = "/tmp/out";
  return agent;
}

CpuProfilers profilers_for(const heartbeat::CommandConfig& command,
                           config::AgentConfig agent = agent_flags()) {
  auto settings = settings_for(agent, command);
  EXPECT_TRUE(settings.ok()) << settings.error().message();
  return settings.ok() ? config::cpu_profilers(*settings) : CpuProfilers::kNone;
}

TEST(CommandSettings, TheCommandsPerfAndEbpfEntriesChooseTheSystemProfiler) {
  heartbeat::CommandConfig command;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpfElsePerf) << "the agent's flags apply";

  command.ebpf = heartbeat::EbpfSetting::kEnabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpf);
  config::AgentConfig dwarf = agent_flags();
  dwarf.perf_mode = config::PerfMode::kDwarf;
  EXPECT_EQ(profilers_for(command, dwarf), CpuProfilers::kEbpf) << "the command asked for eBPF";

  command.ebpf = heartbeat::EbpfSetting::kDisabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kPerf);

  command.ebpf.reset();
  command.perf = heartbeat::PerfConfig{heartbeat::PerfSetting::kDisabled, {}};
  EXPECT_EQ(profilers_for(command), CpuProfilers::kNone) << "Studio's perf off: no system profiler";
  command.ebpf = heartbeat::EbpfSetting::kEnabled;
  EXPECT_EQ(profilers_for(command), CpuProfilers::kEbpf);
}

}  // namespace
}  // namespace dormant::agent
