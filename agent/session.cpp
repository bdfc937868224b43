#include "agent/session.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

#include "agent/profile_facts.h"
#include "agent/snapshot_loop.h"

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
  const SessionPlan& plan = spec_.plan;
  spdlog::info(
      "session {}: starting ({} s {}, {} Hz, {})", spec_.command_id, plan.snapshot_every.count(),
      plan.continuous ? "snapshots until stopped" : "one-shot", plan.profiling.target.frequency_hz,
      plan.profiles_the_whole_host() ? "whole host"
                                     : std::to_string(plan.profiling.target.pids.size()) + " pids");
  SessionStarted started;
  SessionEnded ended;
  auto loaded = environment_.modules->acquire();
  if (!loaded) {
    spdlog::error("session {}: {}", spec_.command_id, loaded.error().message());
    started.profilers.push_back(
        {.name = "profiler module", .running = false, .reason = loaded.error().message()});
    boost::asio::post(io_, [events = events_, started] { events.started(started); });
    boost::asio::post(io_, [events = events_, ended] { events.ended(ended); });
    return;
  }
  module_ = std::move(*loaded);
  auto session =
      module_->profilers().start_session(plan.profiling, profile_facts(plan, environment_.host));
  started.profilers = session->outcomes();
  started.any_running = session->any_running();
  started.perf_supported_events = module_->profilers().perf_supported_events();
  boost::asio::post(io_, [events = events_, started] { events.started(started); });

  try {
    SnapshotOutput output(plan, environment_.host.hostname, environment_.spool,
                          environment_.profile_spooled);
    if (started.any_running) {
      ended.snapshots = run_snapshot_loop(*session, output, plan, [this](auto until) {
                          return wait_for_stop(until);
                        }).snapshots;
    }
  } catch (const std::exception& thrown) {
    // Whatever went wrong, the profilers are still torn down and the supervisor told.
    spdlog::error("session {}: {}; ending it", spec_.command_id, thrown.what());
  }
  ended.profilers = session->outcomes();
  ended.teardown = session->stop();
  if (ended.teardown.abandoned_a_stop) module_->keep_loaded();
  session.reset();
  spdlog::info("session {}: ended after {} snapshots, teardown took {} ms", spec_.command_id,
               ended.snapshots, ended.teardown.took.count());
  boost::asio::post(io_, [events = events_, ended] { events.ended(ended); });
}

}  // namespace dormant::agent
