#include "module/teardown.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/deadline.h"

namespace dormant::module {
namespace {

// Shared by the waiting thread and one stopper, which may outlive the wait.
struct StopState {
  std::mutex mutex;
  std::condition_variable done_changed;
  bool done = false;
  std::string error;
};

bool wait_done(StopState& state, SteadyClock::time_point until) {
  std::unique_lock lock(state.mutex);
  return state.done_changed.wait_until(lock, until, [&] { return state.done; });
}

}  // namespace

TeardownReport stop_profilers(std::vector<std::unique_ptr<profilers::Profiler>> profilers,
                              std::chrono::milliseconds deadline) {
  TeardownReport report;
  auto began = SteadyClock::now();
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

  std::vector<bool> aborted(profilers.size(), false);
  for (size_t i = 0; i < profilers.size(); ++i) {
    if (!wait_done(*states[i], began + deadline)) {
      profilers[i]->abort();
      aborted[i] = true;
    }
  }
  const std::string late =
      ": stop() passed its " + std::to_string(deadline.count()) + " ms deadline";
  auto abort_until = SteadyClock::now() + kAbortGrace;
  for (size_t i = 0; i < profilers.size(); ++i) {
    std::string name(profilers[i]->name());
    if (!wait_done(*states[i], abort_until)) {
      stoppers[i].detach();
      (void)profilers[i].release();  // the abandoned stop() still uses it
      report.problems.push_back(name + late + " and did not return once its processes were " +
                                "killed; abandoned");
      report.abandoned_a_stop = true;
      spdlog::error("{}", report.problems.back());
      continue;
    }
    stoppers[i].join();
    std::string problem;
    if (aborted[i]) problem = name + late + "; its processes were killed";
    if (!states[i]->error.empty()) {
      problem +=
          (problem.empty() ? name + ": stop() failed: " : "; then it failed: ") + states[i]->error;
    }
    if (!problem.empty()) {
      report.problems.push_back(std::move(problem));
      spdlog::error("{}", report.problems.back());
    }
  }
  profilers.clear();
  report.took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - began);
  return report;
}

}  // namespace dormant::module
