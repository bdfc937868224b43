#include "agent/heartbeat_mode.h"

#include <filesystem>

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "agent/agent_health.h"
#include "agent/command_journal.h"
#include "agent/delivery_senders.h"
#include "agent/host_lock.h"
#include "agent/module_loader.h"
#include "agent/profile_facts.h"
#include "agent/resource_audit.h"
#include "agent/session.h"
#include "agent/supervisor.h"
#include "common/host_info.h"
#include "common/iso_time.h"
#include "common/procfs.h"
#include "common/termination_signals.h"
#include "heartbeat/heartbeat_loop.h"
#include "heartbeat/https_client.h"

namespace dormant::agent {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// How long a shutdown waits for owed completions and profiles to reach the server.
constexpr auto kDrainTime = 10s;
// The agent's connections to the server: heartbeats, completions, uploads.
constexpr size_t kServerConnections = 3;
// How often agent_health's USS and PSS are read again.
constexpr auto kRollupEvery = 60s;
// How long the connections for completions and uploads stay open after their last request.
constexpr auto kKeepIdleBetweenBursts = 5s;
// Sockets open at idle that are not connections: the host lock.
constexpr size_t kLockSockets = 1;
// What the teardown audit lets pass over the idle baseline: pages of the agent's own code and data
// that a session touched, and heap that malloc_trim cannot give back (fragmentation adds about
// 2 kB a session over hundreds of them; see the 200-cycle tests).
constexpr ResourceAudit::Limits kAuditLimits{
    .max_sockets = kServerConnections + kLockSockets, .anon_slack_kb = 1024, .uss_slack_kb = 1024};

heartbeat::RetryTimer retry_timer(const config::AgentConfig& config) {
  heartbeat::RetryPolicy policy;
  policy.interval = std::chrono::milliseconds(std::llround(config.heartbeat_interval_s * 1000));
  policy.max_backoff = std::max(policy.interval, std::chrono::milliseconds(300'000));
  return heartbeat::RetryTimer(policy);
}

class HeartbeatAgent {
 public:
  HeartbeatAgent(const config::AgentConfig& config, HostInfo host, CommandJournal journal,
                 std::unique_ptr<ProfileSpool> spool)
      : config_(config),
        host_(std::move(host)),
        journal_(std::move(journal)),
        spool_(std::move(spool)),
        signals_(io_),
        drain_timer_(io_),
        modules_(module_path(config.profiler_module)),
        audit_(kAuditLimits),
        supervisor_(config, host_.hostname, journal_, supervisor_hooks()) {}

  Result<int> run() {
    auto started = start();
    if (!started) return std::move(started).take_error();
    io_.run();
    // The stop cancels the requests in flight, but io_.stop() comes before their handlers run.
    // Each such request's client holds its owner's callback, which holds the client: running the
    // handlers that are ready lets both go before the io_context is destroyed.
    io_.restart();
    io_.poll();
    return 0;
  }

 private:
  Result<void> start() {
    auto tls = heartbeat::make_client_tls({!config_.no_verify, config_.tls_ca_bundle,
                                           config_.tls_client_cert, config_.tls_client_key});
    if (!tls) return std::move(tls).take_error();
    auto api = heartbeat::parse_server_url(config_.api_server);
    if (!api) return std::move(api).take_error().with_context("--api-server");
    auto upload = heartbeat::parse_server_url(config_.upload_server());
    if (!upload) return std::move(upload).take_error().with_context("--server-host");
    for (const auto* url : {&*api, &*upload}) {
      if (!url->tls) {
        spdlog::warn("{} is plain http://: the token and the profiles travel unencrypted",
                     url->host + ":" + url->port);
      }
    }
    if (config_.no_verify) spdlog::warn("--no-verify: the server's certificate is not checked");

    heartbeat::HttpsClient::Headers bearer = {{"Authorization", "Bearer " + config_.token}};
    auto heartbeat_client = heartbeat::HttpsClient::make(io_, *api, *tls, bearer);
    // Completions and uploads come in bursts around sessions: their connections (and the TLS
    // buffers, about 130 kB each) are let go between bursts, and the heap with them.
    heartbeat::PhaseTimeouts control_timeouts;
    control_timeouts.keep_idle = kKeepIdleBetweenBursts;
    auto control_client = heartbeat::HttpsClient::make(io_, *api, *tls, bearer, control_timeouts);
    heartbeat::PhaseTimeouts upload_timeouts = control_timeouts;
    upload_timeouts.write = upload_timeouts.read =
        std::chrono::seconds(config_.server_upload_timeout_s);
    auto upload_client = heartbeat::HttpsClient::make(io_, *upload, *tls, {}, upload_timeouts);
    for (const auto* made : {&heartbeat_client, &control_client, &upload_client}) {
      if (!*made) return made->error();
    }
    for (const auto* bursty : {&control_client, &upload_client}) {
      (**bursty)->on_idle_close([this] {
        ::malloc_trim(0);
        audit_memory_when_quiet();
      });
    }

    completions_ = make_completion_sender(io_, *control_client, retry_timer(config_), journal_);
    if (spool_) {
      uploads_ = make_upload_sender(
          io_, *upload_client, retry_timer(config_), *spool_,
          {config_.token, config_.service_name, host_.hostname, DORMANT_VERSION});
    }
    heartbeats_ = heartbeat::HeartbeatLoop::make(
        io_, *heartbeat_client, retry_timer(config_), [this] { return heartbeat_request(); },
        [this](const heartbeat::HeartbeatResponse& answer) { on_answer(answer); });

    auto orphans = journal_.fail_orphaned_sessions(host_.hostname);
    for (const auto& id : orphans) {
      spdlog::warn("command {} was running when the agent stopped; reported failed", id);
    }
    auto signal_fd = termination_signal_fd();
    if (!signal_fd) return std::move(signal_fd).take_error();
    signals_.assign(signal_fd->release());
    wait_for_signal();

    ip_address_ = default_route_ip();
    spdlog::info("dormant-agent {} idle: heartbeats to {} every {} s as {}/{}", DORMANT_VERSION,
                 config_.api_server, config_.heartbeat_interval_s, config_.service_name,
                 host_.hostname);
    heartbeats_->start();
    completions_->kick();
    if (uploads_) uploads_->kick();
    return {};
  }

  Supervisor::Hooks supervisor_hooks() {
    Supervisor::Hooks hooks;
    hooks.launch = [this](SessionSpec spec, SessionEvents events) {
      // The PMU events are known once a session has loaded the profiler module: nothing is
      // probed while idle.
      events.started = [this, started = std::move(events.started)](const SessionStarted& s) {
        if (s.perf_supported_events) perf_events_ = *s.perf_supported_events;
        started(s);
      };
      SessionEnvironment environment;
      environment.modules = &modules_;
      environment.host = host_;
      environment.spool = spool_.get();
      environment.profile_spooled = [this] {
        if (uploads_) uploads_->kick();
      };
      return Session::launch(io_, std::move(spec), std::move(environment), std::move(events));
    };
    hooks.complete = [this](const heartbeat::CommandCompletion&) {
      if (completions_) completions_->kick();  // the journal owes it already
    };
    hooks.idle = [this] { on_idle(); };
    return hooks;
  }

  heartbeat::HeartbeatRequest heartbeat_request() {
    heartbeat::HeartbeatRequest request;
    request.ip_address = ip_address_;
    request.hostname = host_.hostname;
    request.service_name = config_.service_name;
    request.last_command_id = journal_.last_command_id();
    request.timestamp = iso_utc(std::chrono::system_clock::now(), true);
    request.received_command_ids = journal_.received_ids().ids();
    request.executed_command_ids = journal_.executed_ids().ids();
    request.perf_supported_events = perf_events_;
    request.agent_version = DORMANT_VERSION;
    request.run_mode = "standalone_executable";
    if (rollup_at_ == SteadyClock::time_point() ||
        SteadyClock::now() - rollup_at_ >= kRollupEvery) {
      if (auto memory = procfs::memory_usage(); memory) rollup_ = *memory;
      rollup_at_ = SteadyClock::now();
    }
    HealthInputs inputs{supervisor_,  audit_,        last_audit_,    spool_.get(),
                        *heartbeats_, *completions_, uploads_.get(), rollup_};
    request.agent_health = agent_health(inputs);
    return request;
  }

  void on_answer(const heartbeat::HeartbeatResponse& answer) {
    if (!audit_.has_baseline() && supervisor_.state() == Supervisor::State::kIdle) {
      take_baseline();
    }
    if (answer.command_id && answer.profiling_command) {
      supervisor_.on_command(*answer.command_id, *answer.profiling_command);
    }
  }

  void take_baseline() {
    ::malloc_trim(0);
    if (auto taken = audit_.take_baseline(); !taken) {
      spdlog::warn("cannot take the idle baseline: {}", taken.error().message());
      return;
    }
    const auto& idle = audit_.baseline();
    spdlog::info(
        "idle baseline: USS {} kB, RssAnon {} kB, PSS {} kB, RSS {} kB, {} threads, {} fds, {} "
        "children",
        idle.uss_kb, idle.rss_anon_kb, idle.pss_kb, idle.rss_kb, idle.threads, idle.fds,
        idle.children);
  }

  // The audit after a teardown, in two steps: what the session held (fds, children, threads, BPF
  // objects, mapped files) at once; memory once the connections that deliver the session's
  // completion and profiles have closed, if the agent is still idle then.
  void on_idle() {
    if (!audit_.has_baseline()) return take_baseline();  // which trims first
    const AuditReport* report = audit(/*with_memory=*/false);
    if (report == nullptr) return;
    if (report->clean()) {
      spdlog::info("back to idle: {} threads, {} fds, {} children, {} BPF objects",
                   report->now.threads, report->now.fds, report->now.children,
                   report->now.bpf_objects);
    }
    memory_audit_due_ = true;
    audit_memory_when_quiet();
  }

  void audit_memory_when_quiet() {
    if (!memory_audit_due_ || !last_audit_ || !last_audit_->clean()) return;
    if (supervisor_.state() != Supervisor::State::kIdle) {
      memory_audit_due_ = false;  // a session started: the next teardown audits again
      return;
    }
    if (auto busy = audit_.connections_above_baseline(); busy && *busy) return;
    memory_audit_due_ = false;
    const AuditReport* report = audit(/*with_memory=*/true);
    if (report != nullptr && report->clean()) {
      spdlog::info("idle memory as at the baseline: USS {} kB, RssAnon {} kB, PSS {} kB, RSS {} kB",
                   report->now.uss_kb, report->now.rss_anon_kb, report->now.pss_kb,
                   report->now.rss_kb);
    }
  }

  // Trims the heap and audits; the report is kept for agent_health. Null when none could be made.
  const AuditReport* audit(bool with_memory) {
    ::malloc_trim(0);
    auto report = audit_.audit(with_memory);
    if (!report) {
      spdlog::warn("teardown audit failed: {}", report.error().message());
      return nullptr;
    }
    last_audit_ = std::move(*report);
    return &*last_audit_;
  }

  void wait_for_signal() {
    signals_.async_wait(
        asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code error) {
          if (error) return;
          signalfd_siginfo info{};
          while (::read(signals_.native_handle(), &info, sizeof(info)) == sizeof(info)) {
          }
          on_signal(static_cast<int>(info.ssi_signo));
          wait_for_signal();
        });
  }

  void on_signal(int signal) {
    if (shutting_down_) {
      // Sessions may still be running: no destructor is to wait for them. Their perf children
      // die with this process (PR_SET_PDEATHSIG).
      spdlog::warn("{} again: exiting now", signal == SIGINT ? "SIGINT" : "SIGTERM");
      spdlog::shutdown();
      std::_Exit(1);
    }
    shutting_down_ = true;
    spdlog::info("{} received: ending the sessions", signal == SIGINT ? "SIGINT" : "SIGTERM");
    heartbeats_->stop();
    supervisor_.shut_down([this] { drain(); });
  }

  // Gives the owed completions and profiles a few seconds to reach the server, then stops.
  void drain() {
    drain_until_ = SteadyClock::now() + kDrainTime;
    completions_->flush();
    if (uploads_) uploads_->flush();
    check_drained();
  }

  void check_drained() {
    bool owed = !journal_.owed().empty() || (spool_ && spool_->files() > 0);
    if (!owed || SteadyClock::now() >= drain_until_) {
      if (owed) {
        spdlog::warn("exiting with {} completions and {} profiles undelivered; they are kept in {}",
                     journal_.owed().size(), spool_ ? spool_->files() : 0, config_.state_dir);
      }
      completions_->stop();
      if (uploads_) uploads_->stop();
      signals_.close();
      spdlog::info("dormant-agent stopped");
      return io_.stop();
    }
    drain_timer_.expires_after(100ms);
    drain_timer_.async_wait([this](boost::system::error_code error) {
      if (!error) check_drained();
    });
  }

  const config::AgentConfig& config_;
  HostInfo host_;
  CommandJournal journal_;
  std::unique_ptr<ProfileSpool> spool_;
  asio::io_context io_{1};
  asio::posix::stream_descriptor signals_;
  asio::steady_timer drain_timer_;
  ModuleLoader modules_;  // before the supervisor: its sessions hold the module
  ResourceAudit audit_;
  std::optional<AuditReport> last_audit_;
  bool memory_audit_due_ = false;
  procfs::MemoryUsage rollup_;  // for agent_health's USS and PSS
  SteadyClock::time_point rollup_at_;
  std::shared_ptr<heartbeat::HeartbeatLoop> heartbeats_;
  std::shared_ptr<heartbeat::RetryingSender> completions_;
  std::shared_ptr<heartbeat::RetryingSender> uploads_;
  Supervisor supervisor_;  // after the senders: its sessions call them until they are joined
  std::string ip_address_;
  std::vector<std::string> perf_events_;
  bool shutting_down_ = false;
  SteadyClock::time_point drain_until_;
};

}  // namespace

int run_heartbeat_mode(const config::AgentConfig& config) {
  // One malloc arena for every thread: a session's threads would otherwise each get an arena of
  // their own, which outlives them and keeps its memory after teardown (malloc_trim cannot
  // give all of it back).
  ::mallopt(M_ARENA_MAX, 1);
  agent_start();
  auto lock = HostLock::acquire(config.host_lock);
  if (!lock) {
    spdlog::error("{}", lock.error().message());
    return 1;
  }
  std::error_code error;
  fs::create_directories(config.state_dir, error);
  if (error) {
    spdlog::error("cannot create --state-dir {}: {}", config.state_dir, error.message());
    return 1;
  }
  ::chmod(config.state_dir.c_str(), 0700);
  CommandJournal journal = CommandJournal::open(fs::path(config.state_dir) / "journal.json");
  std::unique_ptr<ProfileSpool> spool;
  if (config.upload_results) {
    auto opened = ProfileSpool::open(fs::path(config.state_dir) / "spool",
                                     static_cast<uint64_t>(config.spool_max_mb) << 20);
    if (!opened) {
      spdlog::error("{}", opened.error().message());
      return 1;
    }
    spool = std::move(*opened);
  }
  HeartbeatAgent agent(config, read_host_info(), std::move(journal), std::move(spool));
  auto ran = agent.run();
  if (!ran) {
    spdlog::error("{}", ran.error().message());
    return 1;
  }
  return *ran;
}

}  // namespace dormant::agent
