// One profiling session: the profiler module loaded, the profilers one start command enables
// built, started, snapshotted and stopped on a worker thread of the session's own, so that the
// agent's I/O thread never waits for perf. Children the profilers spawn are tied to that thread
// (PR_SET_PDEATHSIG): when it ends, nothing it started can outlive it. The session holds the
// module until it is destroyed, after its worker has ended.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "agent/module_loader.h"
#include "agent/profile_spool.h"
#include "agent/session_plan.h"
#include "common/host_info.h"
#include "module/api/profiler_module.h"

namespace dormant::agent {

struct SessionSpec {
  std::string command_id;
  SessionPlan plan;
};

using module::ProfilerOutcome;
using module::TeardownReport;

struct SessionStarted {
  std::vector<ProfilerOutcome> profilers;
  bool any_running = false;
  // As the module found them; nothing when it did not load.
  std::optional<std::vector<std::string>> perf_supported_events;
};

struct SessionEnded {
  TeardownReport teardown;
  int snapshots = 0;
  std::vector<ProfilerOutcome> profilers;  // with their figures at the last snapshot
};

// What the supervisor holds of a session; a fake in the supervisor's unit tests.
class SessionControl {
 public:
  virtual ~SessionControl() = default;
  // Asks the session to end: the snapshot under way is written, then the profilers stop.
  virtual void request_stop() = 0;
};

// Both run on the io_context, in this order, once each.
struct SessionEvents {
  std::function<void(const SessionStarted&)> started;
  // The worker has finished; destroying the session now does not wait.
  std::function<void(const SessionEnded&)> ended;
};

struct SessionEnvironment {
  ModuleLoader* modules = nullptr;
  HostInfo host;
  ProfileSpool* spool = nullptr;  // null without -u
  std::function<void()> profile_spooled;
};

class Session final : public SessionControl {
 public:
  static std::unique_ptr<Session> launch(boost::asio::io_context& io, SessionSpec spec,
                                         SessionEnvironment environment, SessionEvents events);
  // Asks the worker to stop and waits for it.
  ~Session() override;

  void request_stop() override;

 private:
  Session(boost::asio::io_context& io, SessionSpec spec, SessionEnvironment environment,
          SessionEvents events);
  void run();
  // Waits until `until` or a stop request; true if the stop came.
  bool wait_for_stop(std::chrono::steady_clock::time_point until);

  boost::asio::io_context& io_;
  const SessionSpec spec_;
  const SessionEnvironment environment_;
  const SessionEvents events_;
  std::mutex mutex_;
  std::condition_variable stop_requested_changed_;
  bool stop_requested_ = false;
  std::shared_ptr<LoadedModule> module_;  // set by the worker; let go after it has ended
  std::thread worker_;
};

}  // namespace dormant::agent
