#include "agent/heartbeat_mode.h"

#include <filesystem>

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "agent/agent_daemon.h"
#include "agent/agent_directories.h"
#include "agent/host_lock.h"
#include "agent/profile_facts.h"

namespace dormant::agent {

namespace fs = std::filesystem;

int run_heartbeat_mode(const config::AgentConfig& config,
                       std::function<ConfigReading()> reread_config) {
  // One malloc arena for every thread: a session's threads would otherwise each get an arena of
  // their own, which outlives them and keeps its memory after teardown (malloc_trim cannot
  // give all of it back).
  ::mallopt(M_ARENA_MAX, 1);
  agent_start();
  auto lock =
      HostLock::acquire(config.host_lock.empty() ? HostLock::default_path() : config.host_lock);
  if (!lock) {
    spdlog::error("{}", lock.error().message());
    return 1;
  }
  if (auto prepared = prepare_agent_directories(config); !prepared) {
    spdlog::error("{}", prepared.error().message());
    return 1;
  }
  CommandJournal journal = CommandJournal::open(fs::path(config.state_dir) / "journal.json");
  std::unique_ptr<ProfileSpool> spool;
  if (config.upload_results) {
    auto opened = ProfileSpool::open(
        fs::path(config.state_dir) / "spool", static_cast<uint64_t>(config.spool_max_mb) << 20,
        ProfileSpool::kMaxHeldBytes, static_cast<size_t>(config.spool_max_files));
    if (!opened) {
      spdlog::error("{}", opened.error().message());
      return 1;
    }
    spool = std::move(*opened);
    journal.keep_rejected_with(
        [kept = spool.get()](const std::string& id, const std::string& json) {
          kept->keep_rejected_completion(id, json);
        });
  }
  DaemonEnvironment environment;
  environment.reread_config = std::move(reread_config);
  AgentDaemon agent(config, read_host_info(), std::move(journal), std::move(spool),
                    std::move(environment));
  auto ran = agent.run();
  if (!ran) {
    spdlog::error("{}", ran.error().message());
    return 1;
  }
  return *ran;
}

}  // namespace dormant::agent
