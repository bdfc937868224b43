// The teardown of a session's profilers: each stop() in isolation, within its deadline.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "module/teardown.h"

namespace dormant::module {
namespace {

using namespace std::chrono_literals;

// Profilers whose stop() behaves as the test says.
class StopBehaviour : public profilers::Profiler {
 public:
  enum class Kind {
    kFine,
    kThrows,
    kHangsUntilAborted,  // waits on something abort() kills, as stop() waits on perf
    kStuck,              // abort() does not help: stuck in the kernel, say
  };
  StopBehaviour(std::string name, Kind kind, std::shared_ptr<std::atomic<bool>> release)
      : name_(std::move(name)), kind_(kind), release_(std::move(release)) {}
  std::string_view name() const override { return name_; }
  Result<void> start() override { return {}; }
  Result<profile::StackTable> snapshot() override { return profile::StackTable(); }
  void stop() override {
    if (kind_ == Kind::kThrows) throw std::runtime_error("perf vanished");
    while ((kind_ == Kind::kHangsUntilAborted && aborts == 0) ||
           (kind_ == Kind::kStuck && !*release_)) {
      std::this_thread::sleep_for(5ms);
    }
    stopped = true;
  }
  void abort() override { ++aborts; }
  std::atomic<bool> stopped = false;
  std::atomic<int> aborts = 0;

 private:
  std::string name_;
  Kind kind_;
  std::shared_ptr<std::atomic<bool>> release_;
};

TEST(StopProfilers, AHangingOrFailingStopNeverKeepsAnotherRunning) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  using Kind = StopBehaviour::Kind;
  std::vector<std::unique_ptr<profilers::Profiler>> profilers;
  profilers.push_back(std::make_unique<StopBehaviour>("hangs", Kind::kHangsUntilAborted, release));
  profilers.push_back(std::make_unique<StopBehaviour>("throws", Kind::kThrows, release));
  profilers.push_back(std::make_unique<StopBehaviour>("fine", Kind::kFine, release));
  auto report = stop_profilers(std::move(profilers), 200ms);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_EQ(report.problems[0],
            "hangs: stop() passed its 200 ms deadline; its processes were killed");
  EXPECT_EQ(report.problems[1], "throws: stop() failed: perf vanished");
}

TEST(StopProfilers, AStopThatAbortCannotEndIsAbandonedNotFreedUnderIt) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::unique_ptr<profilers::Profiler>> profilers;
  profilers.push_back(
      std::make_unique<StopBehaviour>("stuck", StopBehaviour::Kind::kStuck, release));
  profilers.push_back(std::make_unique<StopBehaviour>("fine", StopBehaviour::Kind::kFine, release));
  auto* stuck = static_cast<StopBehaviour*>(profilers[0].get());
  auto report = stop_profilers(std::move(profilers), 100ms);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_TRUE(report.abandoned_a_stop) << "the module must stay loaded";
  EXPECT_EQ(report.problems[0],
            "stuck: stop() passed its 100 ms deadline and did not return once its processes were "
            "killed; abandoned");
  EXPECT_EQ(stuck->aborts, 1);
  *release = true;  // the abandoned stop() ends; its profiler was never freed under it
  for (int i = 0; i < 200 && !stuck->stopped; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(stuck->stopped);
  std::this_thread::sleep_for(50ms);  // for its thread to return from stop()
  delete stuck;
}

}  // namespace
}  // namespace dormant::module
