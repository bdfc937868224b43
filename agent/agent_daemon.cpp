#include "agent/agent_daemon.h"

#include <set>

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/signalfd.h>

#include <boost/asio/post.hpp>

#include "agent/agent_health.h"
#include "agent/session.h"
#include "common/iso_time.h"
#include "common/logging.h"
#include "common/termination_signals.h"
#include "config/server_urls.h"
#include "heartbeat/delivery_senders.h"
#include "heartbeat/https_client.h"

namespace dormant::agent {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The agent's connections to the server: heartbeats, completions, uploads.
constexpr size_t kServerConnections = 3;
// How often agent_health's USS and PSS are read again.
constexpr auto kRollupEvery = 60s;
// How long the connections for completions and uploads stay open after their last request.
constexpr auto kKeepIdleBetweenBursts = 5s;
// Sockets open at idle that are not connections: the host lock.
constexpr size_t kLockSockets = 1;
// What the teardown audit lets pass over the idle baseline: pages of the agent's own code and of
// shared libraries that a session touched first, and heap that malloc_trim cannot give back. The
// start/stop cycle tests hold the agent to 256 kB.
constexpr ResourceAudit::Limits kAuditLimits{
    .max_sockets = kServerConnections + kLockSockets, .anon_slack_kb = 1024, .uss_slack_kb = 1024};

heartbeat::RetryTimer retry_timer(const config::AgentConfig& config) {
  heartbeat::RetryPolicy policy;
  policy.interval = std::chrono::milliseconds(std::llround(config.heartbeat_interval_s * 1000));
  policy.max_backoff = std::max(policy.interval, std::chrono::milliseconds(300'000));
  return heartbeat::RetryTimer(policy);
}

// A server flag's URLs, taken apart, in the order the client fails over between them.
Result<std::vector<heartbeat::ServerUrl>> server_urls(const std::string& list,
                                                      std::string_view flag) {
  auto urls = config::split_server_urls(list, flag);
  if (!urls) return std::move(urls).take_error();
  std::vector<heartbeat::ServerUrl> servers;
  for (const std::string& url : *urls) {
    auto server = heartbeat::parse_server_url(url);
    if (!server) return std::move(server).take_error().with_context(flag);
    servers.push_back(std::move(*server));
  }
  if (servers.empty()) return Error::invalid_argument(std::string(flag) + ": no URL");
  return servers;
}

// Once for each plain http:// server, whether heartbeats or uploads or both go there.
void warn_of_plain_http(const std::vector<heartbeat::ServerUrl>& api,
                        const std::vector<heartbeat::ServerUrl>& upload) {
  std::set<std::string> warned;
  for (const auto* servers : {&api, &upload}) {
    for (const heartbeat::ServerUrl& url : *servers) {
      if (url.tls || !warned.insert(heartbeat::to_string(url)).second) continue;
      spdlog::warn("{} is plain HTTP: the token and the profiles cross the network in the clear",
                   heartbeat::to_string(url));
    }
  }
}

// The host's inventory, unless the environment gives another reading.
HeartbeatInventory::Scan inventory_scan(const config::AgentConfig& config,
                                        HeartbeatInventory::Scan given) {
  if (given) return given;
  auto scanner = std::make_shared<inventory::InventoryScanner>(
      "/proc", inventory::ContainerRoots{},
      inventory::WorkloadLabelKeys{config.workload_name_labels, config.workload_kind_labels});
  return [scanner] { return scanner->scan(); };
}

}  // namespace

AgentDaemon::AgentDaemon(const config::AgentConfig& config, HostInfo host, CommandJournal journal,
                         std::unique_ptr<ProfileSpool> spool, DaemonEnvironment environment)
    : config_(config),
      host_(std::move(host)),
      journal_(std::move(journal)),
      spool_(std::move(spool)),
      environment_(std::move(environment)),
      signals_(io_),
      drain_timer_(io_),
      modules_(module_path(config.profiler_module)),
      audit_(kAuditLimits),
      supervisor_(config, host_.hostname, journal_, supervisor_hooks()),
      inventory_(inventory_scan(config, environment_.scan_inventory),
                 std::chrono::milliseconds(std::llround(config.inventory_interval_s * 1000))) {}

AgentDaemon::~AgentDaemon() = default;

void AgentDaemon::request_shutdown() {
  asio::post(io_, [this] { on_signal(SIGTERM); });
}

Result<int> AgentDaemon::run() {
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

Result<void> AgentDaemon::start() {
  auto tls = heartbeat::make_client_tls(
      {!config_.no_verify, config_.tls_ca_bundle, config_.tls_client_cert, config_.tls_client_key});
  if (!tls) return std::move(tls).take_error();
  auto api = server_urls(config_.api_server, "--api-server");
  if (!api) return std::move(api).take_error();
  auto upload = server_urls(config_.upload_server(),
                            config_.server_host.empty() ? "--api-server" : "--server-host");
  if (!upload) return std::move(upload).take_error();
  warn_of_plain_http(*api, *upload);
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

  completions_ =
      heartbeat::make_completion_sender(io_, *control_client, retry_timer(config_), journal_);
  clients_ = {*heartbeat_client, *control_client, *upload_client};
  upload_identity_ = {config_.token, config_.service_name, host_.hostname, DORMANT_VERSION};
  if (spool_) {
    uploads_ = heartbeat::make_upload_sender(io_, *upload_client, retry_timer(config_), *spool_,
                                             upload_identity_);
  }
  heartbeats_ = heartbeat::HeartbeatLoop::make(
      io_, *heartbeat_client, retry_timer(config_), [this] { return heartbeat_request(); },
      [this](const wire::HeartbeatResponse& answer) { on_answer(answer); });

  LeftByPreviousRun left = journal_.take_previous_run(host_.hostname);
  for (const auto& id : left.failed) {
    spdlog::warn("command {} was running when the agent stopped; reported failed", id);
  }
  auto signal_fd = termination_signal_fd(/*with_reload=*/true);
  if (!signal_fd) return std::move(signal_fd).take_error();
  signals_.assign(signal_fd->release());
  wait_for_signal();

  ip_address_ = default_route_ip();
  spdlog::info("dormant-agent {} idle: heartbeats to {} every {} s as {}/{}", DORMANT_VERSION,
               config_.api_server, config_.heartbeat_interval_s, config_.service_name,
               host_.hostname);
  if (left.resume) {
    supervisor_.resume(*left.resume, left.resume_completion_owed,
                       left.shut_down_cleanly ? "stopped its sessions and exited"
                                              : "ended without stopping its sessions");
  }
  heartbeats_->start();
  completions_->kick();
  if (uploads_) uploads_->kick();
  return {};
}

Supervisor::Hooks AgentDaemon::supervisor_hooks() {
  Supervisor::Hooks hooks;
  hooks.launch = [this](SessionSpec spec, SessionEvents events) {
    // The event perf settled on spares the next session its trial.
    spec.plan.profiling.perf.known_event = perf_event_;
    events.started = [this, started = std::move(events.started)](const SessionStarted& s) {
      if (s.perf_supported_events) perf_events_ = *s.perf_supported_events;
      for (const auto& outcome : s.profilers) {
        if (outcome.name == "perf" && outcome.running) perf_event_ = outcome.event;
      }
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
  hooks.complete = [this](const wire::CommandCompletion&) {
    if (completions_) completions_->kick();  // the journal owes it already
  };
  hooks.idle = [this] { on_idle(); };
  return hooks;
}

wire::HeartbeatRequest AgentDaemon::heartbeat_request() {
  wire::HeartbeatRequest request;
  request.ip_address = ip_address_;
  request.hostname = host_.hostname;
  request.service_name = config_.service_name;
  request.last_command_id = journal_.last_command_id();
  request.timestamp = iso_utc(std::chrono::system_clock::now(), true);
  request.received_command_ids = journal_.received_ids().ids();
  request.executed_command_ids = journal_.executed_ids().ids();
  request.perf_supported_events = perf_events_;
  request.agent_version = DORMANT_VERSION;
  request.run_mode = placement_.run_mode;
  request.pod_namespace = placement_.pod_namespace;
  request.pod_name = placement_.pod_name;
  SteadyClock::time_point now = environment_.now();
  auto containers = inventory_.containers(now);
  request.containers_text = std::move(containers.text);
  request.containers_digest = std::move(containers.digest);
  if (!rollup_at_ || now - *rollup_at_ >= kRollupEvery) {
    if (auto memory = environment_.read_memory(); memory) rollup_ = *memory;
    rollup_at_ = now;
  }
  nlohmann::json inventory_health = inventory_.health();
  HealthInputs inputs{supervisor_,  journal_,     audit_,          last_audit_,
                      spool_.get(), *heartbeats_, *completions_,   uploads_.get(),
                      rollup_,      last_reload_, inventory_health};
  request.agent_health = agent_health(inputs);
  return request;
}

void AgentDaemon::on_answer(const wire::HeartbeatResponse& answer) {
  if (!audit_.has_baseline() && supervisor_.state() == Supervisor::State::kIdle) {
    take_baseline();
  }
  inventory_.answered(answer.containers_digest);
  if (answer.command_id && answer.profiling_command) {
    supervisor_.on_command(*answer.command_id, *answer.profiling_command);
  }
  // Each heartbeat's short-lived blocks land wherever the free space is; after sessions have
  // spread it over the heap, they would touch pages that a trim had given back. Trimming once the
  // answer's handler has freed them keeps an idle agent at its footprint.
  if (supervisor_.state() == Supervisor::State::kIdle && audit_.has_baseline()) {
    boost::asio::post(io_, [] { ::malloc_trim(0); });
  }
}

void AgentDaemon::take_baseline() {
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
void AgentDaemon::on_idle() {
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

void AgentDaemon::audit_memory_when_quiet() {
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
const AuditReport* AgentDaemon::audit(bool with_memory) {
  ::malloc_trim(0);
  auto report = audit_.audit(with_memory);
  if (!report) {
    spdlog::warn("teardown audit failed: {}", report.error().message());
    return nullptr;
  }
  last_audit_ = std::move(*report);
  return &*last_audit_;
}

void AgentDaemon::wait_for_signal() {
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

void AgentDaemon::on_signal(int signal) {
  if (signal == SIGHUP) return reload();
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
  supervisor_.shut_down([this] {
    journal_.note_clean_shutdown();
    drain();
  });
}

void AgentDaemon::reload() {
  std::string at = iso_utc(std::chrono::system_clock::now(), true);
  if (!environment_.reread_config) {
    spdlog::warn("SIGHUP: this agent cannot read its configuration again");
    return;
  }
  auto settings = reloaded_settings(config_, environment_.reread_config());
  if (!settings) {
    spdlog::error("SIGHUP: the configuration is not reloaded, the running one stays: {}",
                  settings.error().message());
    last_reload_ = {{"at", at}, {"applied", false}, {"error", settings.error().message()}};
    return;
  }
  spdlog::set_level(settings->log_level);
  logging::add_secret(settings->token);
  heartbeat::HttpsClient::Headers bearer = {{"Authorization", "Bearer " + settings->token}};
  for (const auto& client : clients_) client->reconfigure(settings->tls, bearer);
  upload_identity_.token = settings->token;
  for (const auto& name : settings->need_restart) {
    spdlog::warn("SIGHUP: {} changed; that takes effect when the agent starts again", name);
  }
  spdlog::info("SIGHUP: configuration reloaded: log level {}, token and TLS files read again",
               spdlog::level::to_string_view(settings->log_level));
  last_reload_ = {{"at", at}, {"applied", true}, {"need_restart", settings->need_restart}};
}

// Gives the owed completions and profiles a few seconds to reach the server, then stops.
void AgentDaemon::drain() {
  drain_until_ = environment_.now() + environment_.drain_time;
  completions_->flush();
  if (uploads_) uploads_->flush();
  check_drained();
}

void AgentDaemon::check_drained() {
  bool owed = !journal_.owed().empty() || (spool_ && spool_->files() > 0);
  if (!owed || environment_.now() >= drain_until_) {
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

}  // namespace dormant::agent
