#include "agent/session.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "agent/session_builder.h"
#include "agent/snapshot_output.h"

namespace dormant::agent {

std::unique_ptr<Session> Session::launch(boost::asio::io_context& io, SessionSpec spec,
                                         SessionEnvironment environment, SessionEvents events) {
  std::unique_ptr<Session> session(
      new Session(io, std::move(spec), std::move(environment), std::move(events)));
  session->worker_ = std::thread([raw = session.get()] { raw->run(); });
  return session;
}

Session::Session(boost::asio::io_context& io, SessionSpec spec, SessionEnvironment environment,
                 SessionEvents events)
    : io_(io),
      spec_(std::move(spec)),
      environment_(std::move(environment)),
      events_(std::move(events)) {}

Session::~Session() {
  request_stop();
  if (worker_.joinable()) worker_.join();
}

void Session::request_stop() {
  std::lock_guard lock(mutex_);
  stop_requested_ = true;
  stop_requested_changed_.notify_all();
}

bool Session::wait_for_stop(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mutex_);
  return stop_requested_changed_.wait_until(lock, until, [this] { return stop_requested_; });
}

void Session::run() {
  pthread_setname_np(pthread_self(), "session");
  const config::AgentConfig& config = spec_.config;
  spdlog::info("session {}: starting ({} s {}, {} Hz, {})", spec_.command_id, config.duration_s,
               config.continuous ? "snapshots until stopped" : "one-shot", config.frequency_hz,
               config.pids.empty() ? "whole host" : std::to_string(config.pids.size()) + " pids");
  ProfilerSet profilers = ProfilerSet::start(build_profilers(config), environment_.stop_deadline);
  SessionStarted started{profilers.outcomes(), profilers.any_running()};
  boost::asio::post(io_, [events = events_, started] { events.started(started); });

  SessionEnded ended;
  try {
    SnapshotOutput output(config, environment_.host, environment_.spool);
    bool stopping = wait_for_stop(std::chrono::steady_clock::now()) || !started.any_running;
    while (!stopping) {
      auto begin = std::chrono::system_clock::now();
      HostUsageMeter usage;
      stopping = wait_for_stop(std::chrono::steady_clock::now() +
                               std::chrono::seconds(config.duration_s)) ||
                 !config.continuous;
      profile::StackTable stacks = profilers.snapshot();
      // A stop right after a snapshot leaves nothing worth a profile of its own.
      if (stacks.total_samples() > 0 || !stopping || ended.snapshots == 0) {
        output.write(stacks, begin, usage.cpu_percent());
        if (environment_.spool && environment_.profile_spooled) environment_.profile_spooled();
      }
      ++ended.snapshots;
    }
  } catch (const std::exception& thrown) {
    // Whatever went wrong, the profilers are still torn down and the supervisor told.
    spdlog::error("session {}: {}; ending it", spec_.command_id, thrown.what());
  }
  ended.teardown = profilers.stop(environment_.stop_deadline);
  spdlog::info("session {}: ended after {} snapshots, teardown took {} ms", spec_.command_id,
               ended.snapshots, ended.teardown.took.count());
  boost::asio::post(io_, [events = events_, ended] { events.ended(ended); });
}

}  // namespace dormant::agent
