// The idle daemon of heartbeat mode: one I/O thread polls the control server, hands its commands
// to the Supervisor, delivers completions and profiles and audits every teardown; a termination
// signal ends the sessions and gives what is owed a few seconds to reach the server.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/command_journal.h"
#include "agent/config_reload.h"
#include "agent/heartbeat_inventory.h"
#include "agent/module_loader.h"
#include "agent/profile_spool.h"
#include "agent/resource_audit.h"
#include "agent/supervisor.h"
#include "common/deadline.h"
#include "common/host_info.h"
#include "common/perf_events.h"
#include "common/procfs.h"
#include "config/agent_config.h"
#include "heartbeat/delivery_senders.h"
#include "heartbeat/heartbeat_loop.h"
#include "heartbeat/https_client.h"
#include "heartbeat/retrying_sender.h"

namespace dormant::agent {

// What tests replace: the clock of the drain deadline and of agent_health's memory figures,
// and how those figures are read.
struct DaemonEnvironment {
  // How long a shutdown waits for owed completions and profiles to reach the server.
  std::chrono::seconds drain_time{10};
  std::function<SteadyClock::time_point()> now = [] { return SteadyClock::now(); };
  std::function<Result<procfs::MemoryUsage>()> read_memory = [] { return procfs::memory_usage(); };
  // The configuration read again, for SIGHUP; none: SIGHUP is refused.
  std::function<ConfigReading()> reread_config;
  // How the heartbeat's inventory is read; none: the host's, from /proc and the runtimes' state.
  HeartbeatInventory::Scan scan_inventory;
};

class AgentDaemon {
 public:
  // `spool` is null without -u.
  AgentDaemon(const config::AgentConfig& config, HostInfo host, CommandJournal journal,
              std::unique_ptr<ProfileSpool> spool, DaemonEnvironment environment = {});
  ~AgentDaemon();

  // Runs until shut down: the exit code, or why the daemon could not start.
  Result<int> run();
  // What SIGTERM does, from any thread, once run() has started.
  void request_shutdown();

 private:
  Result<void> start();
  Supervisor::Hooks supervisor_hooks();
  wire::HeartbeatRequest heartbeat_request();
  void on_answer(const wire::HeartbeatResponse& answer);
  void take_baseline();
  void on_idle();
  void audit_memory_when_quiet();
  const AuditReport* audit(bool with_memory);
  void wait_for_signal();
  void on_signal(int signal);
  // SIGHUP: the log level, token and TLS files read again and applied, or refused whole.
  void reload();
  void drain();
  void check_drained();

  const config::AgentConfig& config_;
  HostInfo host_;
  CommandJournal journal_;
  std::unique_ptr<ProfileSpool> spool_;
  DaemonEnvironment environment_;
  boost::asio::io_context io_{1};
  boost::asio::posix::stream_descriptor signals_;
  boost::asio::steady_timer drain_timer_;
  ModuleLoader modules_;  // before the supervisor: its sessions hold the module
  ResourceAudit audit_;
  std::optional<AuditReport> last_audit_;
  bool memory_audit_due_ = false;
  procfs::MemoryUsage rollup_;  // for agent_health's USS and PSS
  std::optional<SteadyClock::time_point> rollup_at_;
  std::vector<std::shared_ptr<heartbeat::HttpsClient>> clients_;  // heartbeat, control, upload
  heartbeat::UploadIdentity upload_identity_;  // the uploads' token is reloaded with the clients'
  nlohmann::json last_reload_;
  std::shared_ptr<heartbeat::HeartbeatLoop> heartbeats_;
  std::shared_ptr<heartbeat::RetryingSender> completions_;
  std::shared_ptr<heartbeat::RetryingSender> uploads_;
  Supervisor supervisor_;  // after the senders: its sessions call them until they are joined
  std::string ip_address_;
  AgentPlacement placement_ = agent_placement();
  HeartbeatInventory inventory_;
  // The host's PMU events, from sysfs at start; a session's module says them again.
  std::vector<std::string> perf_events_ = pmu_events();
  std::string perf_event_;  // what the last session's perf recorded with
  bool shutting_down_ = false;
  SteadyClock::time_point drain_until_;
};

}  // namespace dormant::agent
