// dormant-agent: reads its configuration, then runs the mode it asks for.
#include <cstdio>
#include <optional>
#include <string>
#include <variant>

#include <spdlog/spdlog.h>

#include "agent/allocator_settings.h"
#include "agent/heartbeat_mode.h"
#include "agent/launched_program.h"
#include "agent/local_run.h"
#include "common/logging.h"
#include "common/termination_signals.h"
#include "config/agent_config.h"

int main(int argc, char** argv) {
  dormant::block_termination_signals();

  auto parsed = dormant::config::parse_agent_args(argc, argv);
  if (auto* exit = std::get_if<dormant::config::ExitRequest>(&parsed)) {
    std::fputs(exit->text.c_str(), exit->exit_code == 0 ? stdout : stderr);
    return exit->exit_code;
  }
  const auto& config = std::get<dormant::config::AgentConfig>(parsed);
  std::optional<std::string> untuned;
  if (config.enable_heartbeat_server) untuned = dormant::agent::apply_allocator_settings(argv);

  dormant::logging::Options log_options;
  log_options.level = dormant::logging::parse_level(config.log_level).value_or(spdlog::level::info);
  dormant::logging::setup(log_options);
  dormant::logging::add_secret(config.token);
  if (untuned) spdlog::warn("{}", *untuned);
  if (dormant::config::token_on_command_line(argc, argv)) {
    spdlog::warn(
        "the token is on the command line, where every local user can read it "
        "(/proc/PID/cmdline): give it in --token-file instead");
  }

  if (config.enable_heartbeat_server) {
    dormant::block_reload_signal();
    return dormant::agent::run_heartbeat_mode(
        config, [argc, argv] { return dormant::config::parse_agent_args(argc, argv); });
  }
  if (!config.launch_command.empty()) return dormant::agent::run_launched_program(config);
  return dormant::agent::run_local_profiling(config);
}
