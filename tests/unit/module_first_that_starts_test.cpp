#include <gtest/gtest.h>

#include "module/first_that_starts.h"

namespace dormant::module {
namespace {

// A profiler whose start() succeeds or fails as told, and which records what was called.
class Candidate : public profilers::Profiler {
 public:
  Candidate(std::string name, std::optional<Error> failure)
      : name_(std::move(name)), failure_(std::move(failure)) {}
  std::string_view name() const override { return name_; }
  Result<void> start() override {
    ++starts;
    if (failure_) return *failure_;
    return ok();
  }
  Result<profile::StackTable> snapshot() override {
    profile::StackTable table;
    std::string_view frames[] = {name_};
    table.add("", "p", frames, 1);
    return table;
  }
  void stop() override { ++stops; }
  void abort() override { ++aborts; }
  int starts = 0, stops = 0, aborts = 0;

 private:
  std::string name_;
  std::optional<Error> failure_;
};

TEST(FirstThatStarts, RunsTheFirstCandidateThatStartsAndIsNamedAfterIt) {
  auto ebpf = std::make_unique<Candidate>(
      "ebpf", Error(ErrorKind::kUnavailable, "the eBPF sampler needs CAP_BPF and CAP_PERFMON"));
  auto perf = std::make_unique<Candidate>("perf", std::nullopt);
  Candidate* first = ebpf.get();
  Candidate* second = perf.get();
  std::vector<std::unique_ptr<profilers::Profiler>> candidates;
  candidates.push_back(std::move(ebpf));
  candidates.push_back(std::move(perf));
  FirstThatStarts profiler(std::move(candidates));

  ASSERT_TRUE(profiler.start().ok());
  EXPECT_EQ(profiler.name(), "perf");
  EXPECT_EQ(first->stops, 1) << "what the failed start left is released";
  auto snapshot = profiler.snapshot();
  ASSERT_TRUE(snapshot.ok());
  EXPECT_EQ(snapshot->total_samples(), 1u);
  profiler.abort();
  profiler.stop();
  EXPECT_EQ(second->aborts, 1);
  EXPECT_EQ(second->stops, 1);
}

TEST(FirstThatStarts, WhenNoneStartsTheErrorGivesEveryReason) {
  std::vector<std::unique_ptr<profilers::Profiler>> candidates;
  candidates.push_back(
      std::make_unique<Candidate>("ebpf", Error(ErrorKind::kUnavailable, "no BTF")));
  candidates.push_back(
      std::make_unique<Candidate>("perf", Error(ErrorKind::kUnavailable, "perf is not installed")));
  FirstThatStarts profiler(std::move(candidates));
  auto started = profiler.start();
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.error().kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(started.error().message(), "no BTF; perf is not installed");
  EXPECT_EQ(profiler.name(), "perf");
}

}  // namespace
}  // namespace dormant::module
