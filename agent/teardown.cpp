#include "agent/teardown.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/deadline.h"

namespace dormant::agent {
namespace {

// Shared by the waiting thread and one stopper, which may outlive the wait.
struct StopState {
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
  std::string error;
};

}  // namespace

TeardownReport stop_profilers(std::vector<std::unique_ptr<profilers::Profiler>> profilers,
                              std::chrono::milliseconds deadline) {
  TeardownReport report;
  auto began = SteadyClock::now();
  auto until = began + deadline;
  std::vector<std::shared_ptr<StopState>> states;
  std::vector<std::thread> stoppers;
  for (auto& profiler : profilers) {
    auto state = std::make_shared<StopState>();
    states.push_back(state);
    stoppers.emplace_back([profiler = profiler.get(), state] {
      std::string error;
      try {
        profiler->stop();
      } catch (const std::exception& thrown) {
        error = thrown.what();
      }
      std::lock_guard lock(state->mutex);
      state->done = true;
      state->error = std::move(error);
      state->done_changed.notify_all();
    });
  }
  for (size_t i = 0; i < profilers.size(); ++i) {
    std::unique_lock lock(states[i]->mutex);
    bool done = states[i]->done_changed.wait_until(lock, until, [&] { return states[i]->done; });
    std::string name(profilers[i]->name());
    if (!done) {
      lock.unlock();
      stoppers[i].detach();
      (void)profilers[i].release();  // the abandoned stop() still uses it
      report.problems.push_back(name + ": stop() did not end within " +
                                std::to_string(deadline.count()) + " ms; abandoned");
      spdlog::error("{}", report.problems.back());
      continue;
    }
    if (!states[i]->error.empty()) {
      report.problems.push_back(name + ": stop() failed: " + states[i]->error);
      spdlog::error("{}", report.problems.back());
    }
    lock.unlock();
    stoppers[i].join();
  }
  profilers.clear();
  report.took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - began);
  return report;
}

}  // namespace dormant::agent
