// The profilers of a session once started: who runs, why the others do not, one merged snapshot
// with a marker for each that has nothing to give, and a stop that reaches every one.
#include <gtest/gtest.h>

#include "module/profiler_set.h"

namespace dormant::module {
namespace {

struct Calls {
  int starts = 0, snapshots = 0, stops = 0;
};

class Scripted : public profilers::Profiler {
 public:
  enum class Start { kRuns, kUnavailable, kFails, kThrows };
  Scripted(std::string name, Start start, Calls& calls, bool snapshot_fails = false)
      : name_(std::move(name)), start_(start), calls_(calls), snapshot_fails_(snapshot_fails) {}
  std::string_view name() const override { return name_; }
  Result<void> start() override {
    ++calls_.starts;
    switch (start_) {
      case Start::kRuns:
        return ok();
      case Start::kUnavailable:
        return Error(ErrorKind::kUnavailable, "nothing to profile");
      case Start::kFails:
        return Error(ErrorKind::kSystem, "perf_event_open: permission denied");
      case Start::kThrows:
        throw std::runtime_error("bad_alloc, say");
    }
    return ok();
  }
  Result<profile::StackTable> snapshot() override {
    ++calls_.snapshots;
    if (snapshot_fails_) return Error(ErrorKind::kSystem, "perf script died by SIGSEGV");
    profile::StackTable table;
    std::string_view frames[] = {"main", name_};
    table.add("", "app", frames, 5);
    return table;
  }
  void stop() override { ++calls_.stops; }
  void abort() override {}

 private:
  std::string name_;
  Start start_;
  Calls& calls_;
  bool snapshot_fails_;
};

std::string frames_of(const profile::StackTable& stacks) {
  std::string all;
  stacks.for_each([&](const profile::StackView& stack) {
    for (profile::StringId id : stack.frame_ids) all += std::string(stacks.string(id)) + ";";
    all += " " + std::to_string(stack.count) + "\n";
  });
  return all;
}

TEST(ProfilerSet, EachProfilerRunsOrSaysWhyNotAndEveryOneIsStopped) {
  using Start = Scripted::Start;
  Calls runs, skipped, fails, throws;
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  built.push_back(std::make_unique<Scripted>("perf", Start::kRuns, runs));
  built.push_back(std::make_unique<Scripted>("ebpf", Start::kUnavailable, skipped));
  built.push_back(std::make_unique<Scripted>("gpu", Start::kFails, fails));
  built.push_back(std::make_unique<Scripted>("odd", Start::kThrows, throws));
  auto set = ProfilerSet::start(std::move(built), std::chrono::seconds(5));
  EXPECT_TRUE(set.any_running());
  ASSERT_EQ(set.outcomes().size(), 4u);
  EXPECT_TRUE(set.outcomes()[0].running);
  EXPECT_EQ(set.outcomes()[1].reason, "nothing to profile");
  EXPECT_EQ(set.outcomes()[2].reason, "perf_event_open: permission denied");
  EXPECT_EQ(set.outcomes()[3].reason, "start() threw: bad_alloc, say");
  // Those that did not start are stopped at once, to release what a half-done start() left.
  EXPECT_EQ(skipped.stops + fails.stops + throws.stops, 3);
  EXPECT_EQ(runs.stops, 0);

  std::string frames = frames_of(set.snapshot());
  EXPECT_NE(frames.find("main;perf; 5"), std::string::npos) << frames;
  EXPECT_NE(frames.find("[Profiling ebpf: nothing to profile]"), std::string::npos) << frames;
  EXPECT_NE(frames.find("[Profiling gpu: perf_event_open: permission denied]"), std::string::npos)
      << frames;

  auto report = set.stop(std::chrono::seconds(5));
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(runs.stops, 1);
  EXPECT_FALSE(set.any_running());
}

TEST(ProfilerSet, AFailedSnapshotLeavesAMarkerAndTheOthersSamples) {
  using Start = Scripted::Start;
  Calls good, bad;
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  built.push_back(std::make_unique<Scripted>("perf", Start::kRuns, bad, /*snapshot_fails=*/true));
  built.push_back(std::make_unique<Scripted>("ebpf", Start::kRuns, good));
  auto set = ProfilerSet::start(std::move(built), std::chrono::seconds(5));
  std::string frames = frames_of(set.snapshot());
  EXPECT_NE(frames.find("[Profiling perf: perf script died by SIGSEGV]"), std::string::npos)
      << frames;
  EXPECT_NE(frames.find("main;ebpf; 5"), std::string::npos) << frames;
}

}  // namespace
}  // namespace dormant::module
