// The command state machine with sessions that report when the test says so: slots, pausing and
// resuming, replacement, stops by host and by process, de-duplication, one completion per command.
#include "agent/supervisor.h"

#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;

// A session the test drives: it records the stop request; the test reports start and end.
struct FakeSession {
  SessionSpec spec;
  SessionEvents events;
  bool stop_requested = false;
  bool ended = false;
};

class FakeControl : public SessionControl {
 public:
  explicit FakeControl(std::shared_ptr<FakeSession> session) : session_(std::move(session)) {}
  void request_stop() override { session_->stop_requested = true; }

 private:
  std::shared_ptr<FakeSession> session_;
};

std::string id(int n) {
  char text[40];
  std::snprintf(text, sizeof(text), "00000000-0000-4000-8000-%012d", n);
  return text;
}

wire::ProfilingCommand start_command(bool continuous, std::vector<int> pids = {},
                                     nlohmann::json extra = nlohmann::json::object()) {
  wire::ProfilingCommand command;
  command.command_type = "start";
  command.combined_config = {{"continuous", continuous}, {"duration", 30}, {"frequency", 11}};
  if (!pids.empty()) command.combined_config["pids"] = pids;
  command.combined_config.update(extra);
  return command;
}

wire::ProfilingCommand stop_command(std::vector<int> pids = {}) {
  wire::ProfilingCommand command;
  command.command_type = "stop";
  command.combined_config = {{"stop_level", pids.empty() ? "host" : "process"}};
  if (!pids.empty()) command.combined_config["pids"] = pids;
  return command;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() /
                 ("dormant-supervisor-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(directory_);
    journal_ = std::make_unique<CommandJournal>(CommandJournal::open(directory_ / "journal.json"));
    config_.enable_heartbeat_server = true;
    config_.api_server = "https://studio";
    config_.service_name = "web";
    config_.token = "t";
    config_.output_dir = directory_ / "out";
    make_supervisor();
  }
  void TearDown() override {
    supervisor_.reset();
    fs::remove_all(directory_);
  }

  void make_supervisor() {
    Supervisor::Hooks hooks;
    hooks.launch = [this](SessionSpec spec, SessionEvents events) {
      auto session = std::make_shared<FakeSession>(FakeSession{std::move(spec), std::move(events)});
      sessions_.push_back(session);
      return std::make_unique<FakeControl>(session);
    };
    hooks.complete = [this](wire::CommandCompletion completion) {
      completions_.push_back(std::move(completion));
    };
    hooks.idle = [this] { ++idles_; };
    supervisor_ = std::make_unique<Supervisor>(config_, "web-01", *journal_, std::move(hooks));
  }

  static void report_started(FakeSession& session, bool running = true) {
    SessionStarted started;
    started.any_running = running;
    started.profilers = {
        {.name = "perf", .running = running, .reason = running ? "" : "perf is not installed"}};
    session.events.started(started);
  }
  static void report_ended(FakeSession& session) {
    ASSERT_FALSE(session.ended);
    session.ended = true;
    session.events.ended(SessionEnded{});
  }

  // The completion of `command_id`, which must be the only one.
  const wire::CommandCompletion& completion_of(const std::string& command_id) {
    const wire::CommandCompletion* found = nullptr;
    for (const auto& completion : completions_) {
      if (completion.command_id != command_id) continue;
      EXPECT_EQ(found, nullptr) << "two completions for " << command_id;
      found = &completion;
    }
    static const wire::CommandCompletion kNone{};
    EXPECT_NE(found, nullptr) << "no completion for " << command_id;
    return found ? *found : kNone;
  }
  bool completed(const std::string& command_id) {
    for (const auto& completion : completions_) {
      if (completion.command_id == command_id) return true;
    }
    return false;
  }

  fs::path directory_;
  config::AgentConfig config_;
  std::unique_ptr<CommandJournal> journal_;
  std::unique_ptr<Supervisor> supervisor_;
  std::vector<std::shared_ptr<FakeSession>> sessions_;
  std::vector<wire::CommandCompletion> completions_;
  int idles_ = 0;
};

TEST_F(SupervisorTest, StartRunsASessionAndCompletesWhenItsProfilersRun) {
  supervisor_->on_command(id(1), start_command(true));
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(sessions_[0]->spec.command_id, id(1));
  EXPECT_TRUE(sessions_[0]->spec.plan.continuous);
  EXPECT_EQ(sessions_[0]->spec.plan.snapshot_every, std::chrono::seconds(30));
  EXPECT_TRUE(completions_.empty()) << "not before the profilers run";
  report_started(*sessions_[0]);
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kRunning);
  EXPECT_EQ(journal_->sessions(), std::vector<std::string>{id(1)});
}

TEST_F(SupervisorTest, TheSameCommandDeliveredAgainAndAgainRunsOnce) {
  for (int i = 0; i < 100; ++i) supervisor_->on_command(id(1), start_command(true));
  EXPECT_EQ(sessions_.size(), 1u);
  report_started(*sessions_[0]);
  EXPECT_EQ(completions_.size(), 1u);
}

TEST_F(SupervisorTest, AStartWhoseProfilersAllFailIsReportedFailedWithTheReason) {
  supervisor_->on_command(id(1), start_command(false));
  report_started(*sessions_[0], false);
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kFailed);
  EXPECT_NE(completion_of(id(1)).error_message->find("perf is not installed"), std::string::npos);
  report_ended(*sessions_[0]);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kIdle);
  EXPECT_EQ(idles_, 1);
  EXPECT_TRUE(journal_->sessions().empty());
}

TEST_F(SupervisorTest, AnInvalidCommandFailsWithTheReasonAndNothingStarts) {
  supervisor_->on_command(id(1), start_command(true, {}, {{"duration", 0}}));
  supervisor_->on_command(id(2), start_command(true, {}, {{"pids", {"x"}}}));
  wire::ProfilingCommand odd;
  odd.command_type = "explode";
  supervisor_->on_command(id(3), odd);
  EXPECT_TRUE(sessions_.empty());
  for (int n : {1, 2, 3}) {
    EXPECT_EQ(completion_of(id(n)).status, wire::CompletionStatus::kFailed) << n;
  }
  EXPECT_NE(completion_of(id(1)).error_message->find("duration"), std::string::npos);
}

TEST_F(SupervisorTest, ACommandForOtherHostsIsNotRun) {
  supervisor_->on_command(id(1), start_command(true, {}, {{"target_hostnames", {"db-01"}}}));
  EXPECT_TRUE(sessions_.empty());
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kFailed);
}

TEST_F(SupervisorTest, StopEndsTheSessionAndCompletesAfterTheTeardown) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), stop_command());
  EXPECT_TRUE(sessions_[0]->stop_requested);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kStopping);
  EXPECT_FALSE(completed(id(2))) << "not before the teardown is done";
  report_ended(*sessions_[0]);
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kIdle);
  EXPECT_EQ(idles_, 1);
  EXPECT_TRUE(journal_->sessions().empty());
}

TEST_F(SupervisorTest, AStopWithNothingRunningCompletesAtOnce) {
  supervisor_->on_command(id(1), stop_command());
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kCompleted);
}

TEST_F(SupervisorTest, ANewContinuousStartReplacesTheRunningOne) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(true, {}, {{"frequency", 99}}));
  EXPECT_TRUE(sessions_[0]->stop_requested);
  ASSERT_EQ(sessions_.size(), 1u) << "the new one waits for the old one's teardown";
  report_ended(*sessions_[0]);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(sessions_[1]->spec.plan.profiling.target.frequency_hz, 99);
  report_started(*sessions_[1]);
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(journal_->sessions(), std::vector<std::string>{id(2)});
  EXPECT_EQ(idles_, 0);
}

TEST_F(SupervisorTest, AnOverlappingOneShotPausesTheContinuousSessionWhichResumesAfter) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(false));
  EXPECT_TRUE(sessions_[0]->stop_requested) << "both use perf: the continuous one pauses";
  report_ended(*sessions_[0]);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(sessions_[1]->spec.command_id, id(2));
  EXPECT_FALSE(sessions_[1]->spec.plan.continuous);
  report_started(*sessions_[1]);
  report_ended(*sessions_[1]);  // the one-shot's snapshot is done
  ASSERT_EQ(sessions_.size(), 3u);
  EXPECT_EQ(sessions_[2]->spec.command_id, id(1)) << "the continuous session resumes";
  report_started(*sessions_[2]);
  EXPECT_EQ(completions_.size(), 2u) << "a resumed session is not reported again";
  EXPECT_EQ(journal_->sessions(), std::vector<std::string>{id(1)});
  EXPECT_EQ(idles_, 0);
}

TEST_F(SupervisorTest, AContinuousStartReplacesAPausedOneWhichIsNoLongerASession) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(false));
  report_ended(*sessions_[0]);  // paused for the one-shot
  supervisor_->on_command(id(3), start_command(true));
  EXPECT_EQ(journal_->sessions(), std::vector<std::string>{id(2)})
      << "a restart must not report the replaced session failed";
  report_started(*sessions_[1]);
  report_ended(*sessions_[1]);
  ASSERT_EQ(sessions_.size(), 3u);
  EXPECT_EQ(sessions_[2]->spec.command_id, id(3));
}

TEST_F(SupervisorTest, AOneShotThatDoesNotOverlapRunsBesideTheContinuousSession) {
  supervisor_->on_command(id(1),
                          start_command(true, {}, {{"profiler_configs", {{"perf", "disabled"}}}}));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(false));
  EXPECT_FALSE(sessions_[0]->stop_requested);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(supervisor_->running_commands().size(), 2u);
}

TEST_F(SupervisorTest, OneShotsWaitTheirTurn) {
  supervisor_->on_command(id(1), start_command(false));
  supervisor_->on_command(id(2), start_command(false));
  ASSERT_EQ(sessions_.size(), 1u);
  report_started(*sessions_[0]);
  report_ended(*sessions_[0]);
  ASSERT_EQ(sessions_.size(), 2u);
  EXPECT_EQ(sessions_[1]->spec.command_id, id(2));
}

TEST_F(SupervisorTest, AStopIsNotHeldBehindAOneShot) {
  supervisor_->on_command(id(1), start_command(false));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(false));
  supervisor_->on_command(id(3), stop_command());
  EXPECT_TRUE(sessions_[0]->stop_requested);
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kFailed)
      << "the queued one-shot is cancelled";
  report_ended(*sessions_[0]);
  EXPECT_EQ(completion_of(id(3)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kIdle);
}

TEST_F(SupervisorTest, AProcessStopTakesOnlyThosePidsOut) {
  supervisor_->on_command(id(1), start_command(true, {100, 200, 300}));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), stop_command({200}));
  EXPECT_TRUE(sessions_[0]->stop_requested);
  report_ended(*sessions_[0]);
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kCompleted);
  ASSERT_EQ(sessions_.size(), 2u) << "the session goes on with the other pids";
  EXPECT_EQ(sessions_[1]->spec.plan.profiling.target.pids, (std::vector<int>{100, 300}));
  EXPECT_EQ(sessions_[1]->spec.command_id, id(1));
  report_started(*sessions_[1]);
  EXPECT_EQ(completions_.size(), 2u);

  supervisor_->on_command(id(3), stop_command({100, 300}));
  report_ended(*sessions_[1]);
  EXPECT_EQ(sessions_.size(), 2u) << "no pid left: the session ends";
  EXPECT_EQ(completion_of(id(3)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kIdle);
}

TEST_F(SupervisorTest, AProcessStopDuringAPauseChangesWhatResumes) {
  supervisor_->on_command(id(1), start_command(true, {100, 200, 300}));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(false, {100}));  // pauses the continuous one
  supervisor_->on_command(id(3), stop_command({200}));          // before its teardown is done
  report_ended(*sessions_[0]);
  ASSERT_EQ(sessions_.size(), 2u) << "nothing but the one-shot is launched";
  EXPECT_EQ(sessions_[1]->spec.command_id, id(2));
  EXPECT_EQ(completion_of(id(3)).status, wire::CompletionStatus::kCompleted);
  report_started(*sessions_[1]);
  report_ended(*sessions_[1]);
  ASSERT_EQ(sessions_.size(), 3u);
  EXPECT_EQ(sessions_[2]->spec.command_id, id(1));
  EXPECT_EQ(sessions_[2]->spec.plan.profiling.target.pids, (std::vector<int>{100, 300}))
      << "the stopped pid must not be profiled again";
}

TEST_F(SupervisorTest, AProcessStopAfterAHostStopDoesNotBringTheSessionBack) {
  supervisor_->on_command(id(1), start_command(true, {100, 200, 300}));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), stop_command());
  supervisor_->on_command(id(3), stop_command({200}));  // before the teardown is done
  report_ended(*sessions_[0]);
  EXPECT_EQ(sessions_.size(), 1u) << "the host stop ends the session for good";
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(completion_of(id(3)).status, wire::CompletionStatus::kCompleted);
  EXPECT_EQ(supervisor_->state(), Supervisor::State::kIdle);
}

TEST_F(SupervisorTest, AProcessStopCannotTakePidsOutOfAWholeHostSession) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), stop_command({200}));
  EXPECT_FALSE(sessions_[0]->stop_requested);
  EXPECT_EQ(completion_of(id(2)).status, wire::CompletionStatus::kFailed);
  EXPECT_NE(completion_of(id(2)).error_message->find("whole host"), std::string::npos);
}

TEST_F(SupervisorTest, ShutDownEndsEverySessionThenCallsBack) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  bool done = false;
  supervisor_->shut_down([&] { done = true; });
  EXPECT_TRUE(sessions_[0]->stop_requested);
  EXPECT_FALSE(done);
  report_ended(*sessions_[0]);
  EXPECT_TRUE(done);
  EXPECT_TRUE(journal_->sessions().empty()) << "a session ended by SIGTERM is not an orphan";
  ASSERT_TRUE(journal_->continuous()) << "the command stays in force, for the next run";
  EXPECT_EQ(journal_->continuous()->command_id, id(1));
}

TEST_F(SupervisorTest, ARestartedAgentNeverRerunsAOneShotAndReportsTheOrphanFailed) {
  supervisor_->on_command(id(1), start_command(false));
  report_started(*sessions_[0]);
  // The agent dies here: a new journal and supervisor read what the old ones wrote.
  supervisor_.reset();
  journal_ = std::make_unique<CommandJournal>(CommandJournal::open(directory_ / "journal.json"));
  LeftByPreviousRun left = journal_->take_previous_run("web-01");
  EXPECT_EQ(left.failed, std::vector<std::string>{id(1)});
  EXPECT_FALSE(left.resume);
  ASSERT_FALSE(journal_->owed().empty());
  EXPECT_EQ(journal_->owed().back().status, wire::CompletionStatus::kFailed);
  EXPECT_EQ(journal_->owed().back().error_message, "agent restarted during session");
  make_supervisor();
  sessions_.clear();
  supervisor_->on_command(id(1), start_command(false));
  EXPECT_TRUE(sessions_.empty()) << "the server re-sends the command; it must not run again";
}

// The agent dies (no shutdown) during a continuous session narrowed to pid 9 by a process-level
// stop: the next run starts it again, with pid 9 only and no second completion; the server's
// re-sent command does not start it twice, and a stop ends it for good.
TEST_F(SupervisorTest, AContinuousSessionIsResumedByTheNextRunUntilAStopEndsIt) {
  supervisor_->on_command(id(1), start_command(true, {7, 9}));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), stop_command({7}));
  report_ended(*sessions_[0]);
  ASSERT_EQ(sessions_.size(), 2u);
  report_started(*sessions_[1]);
  supervisor_.reset();
  journal_ = std::make_unique<CommandJournal>(CommandJournal::open(directory_ / "journal.json"));
  LeftByPreviousRun left = journal_->take_previous_run("web-01");
  EXPECT_TRUE(left.failed.empty());
  ASSERT_TRUE(left.resume);
  completions_.clear();
  sessions_.clear();
  make_supervisor();
  supervisor_->resume(*left.resume, left.resume_completion_owed, "was killed");
  ASSERT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(sessions_[0]->spec.command_id, id(1));
  EXPECT_EQ(sessions_[0]->spec.plan.profiling.target.pids, std::vector<int>{9});
  EXPECT_EQ(supervisor_->resumed()["command_id"], id(1));
  EXPECT_EQ(supervisor_->resumed()["previous_agent"], "was killed");
  report_started(*sessions_[0]);
  EXPECT_TRUE(completions_.empty()) << "its start was reported by the previous run";
  supervisor_->on_command(id(1), start_command(true, {7, 9}));
  EXPECT_EQ(sessions_.size(), 1u);
  EXPECT_EQ(journal_->sessions(), std::vector<std::string>{id(1)});

  supervisor_->on_command(id(3), stop_command());
  report_ended(*sessions_[0]);
  EXPECT_EQ(completion_of(id(3)).status, wire::CompletionStatus::kCompleted);
  EXPECT_FALSE(journal_->continuous()) << "a stop ends it for good";
  EXPECT_FALSE(
      CommandJournal::open(directory_ / "journal.json").take_previous_run("web-01").resume);
}

// SIGTERM while a newer continuous command waits for the running one's teardown: the newer one is
// in force for the next run, its completion still owed; a stop under way when SIGTERM comes ends
// its command for good all the same.
TEST_F(SupervisorTest, AtShutdownTheNewestContinuousCommandStaysInForceAndAStopStillEndsOne) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(2), start_command(true, {5}));
  EXPECT_TRUE(sessions_[0]->stop_requested);
  supervisor_->shut_down([] {});
  report_ended(*sessions_[0]);
  EXPECT_EQ(sessions_.size(), 1u) << "nothing is launched while shutting down";
  ASSERT_TRUE(journal_->continuous());
  EXPECT_EQ(journal_->continuous()->command_id, id(2));
  EXPECT_FALSE(completed(id(2)));
  auto left = CommandJournal::open(directory_ / "journal.json").take_previous_run("web-01");
  ASSERT_TRUE(left.resume);
  EXPECT_TRUE(left.resume_completion_owed);
  EXPECT_TRUE(left.failed.empty());

  fs::remove(directory_ / "journal.json");
  journal_ = std::make_unique<CommandJournal>(CommandJournal::open(directory_ / "journal.json"));
  sessions_.clear();
  make_supervisor();
  supervisor_->on_command(id(3), start_command(true));
  report_started(*sessions_[0]);
  supervisor_->on_command(id(4), stop_command());
  supervisor_->shut_down([] {});
  report_ended(*sessions_[0]);
  EXPECT_FALSE(journal_->continuous());
}

// A continuous session that ends by itself (its profilers failed) is not resumed by a later run.
TEST_F(SupervisorTest, AContinuousSessionThatEndedByItselfIsNotInForce) {
  supervisor_->on_command(id(1), start_command(true));
  report_started(*sessions_[0], /*running=*/false);
  report_ended(*sessions_[0]);
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kFailed);
  EXPECT_FALSE(journal_->continuous());
}

// A journal whose command no longer parses (the new agent refuses what the old one took): the
// resume fails saying why, the command is dropped, and the agent stays idle.
TEST_F(SupervisorTest, AResumedCommandTheAgentNowRefusesIsDroppedSayingWhy) {
  supervisor_->resume({id(1), {{"continuous", true}, {"frequency", "fast"}}, std::nullopt}, true,
                      "was killed");
  EXPECT_TRUE(sessions_.empty());
  EXPECT_EQ(completion_of(id(1)).status, wire::CompletionStatus::kFailed);
  EXPECT_FALSE(journal_->continuous());
}

}  // namespace
}  // namespace dormant::agent
