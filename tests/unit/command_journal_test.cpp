#include "agent/command_journal.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;

std::string id(int n) {
  char text[40];
  std::snprintf(text, sizeof(text), "00000000-0000-4000-8000-%012d", n);
  return text;
}

class CommandJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("dormant-journal-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
    path_ = directory_ / "journal.json";
  }
  void TearDown() override { fs::remove_all(directory_); }
  void write(const std::string& text) { std::ofstream(path_) << text; }

  fs::path directory_;
  fs::path path_;
};

TEST_F(CommandJournalTest, WhatIsWrittenIsReadBackByTheNextRun) {
  {
    auto journal = CommandJournal::open(path_);
    journal.add_received(id(1));
    journal.add_session(id(1));
    wire::CommandCompletion owed{id(1), "web-01",     wire::CompletionStatus::kCompleted,
                                 2.0,   std::nullopt, std::nullopt};
    journal.record_completion(owed);
  }
  auto journal = CommandJournal::open(path_);
  EXPECT_TRUE(journal.was_received(id(1)));
  EXPECT_FALSE(journal.was_received(id(2)));
  EXPECT_EQ(journal.last_command_id(), id(1));
  EXPECT_EQ(journal.executed_ids().front(), id(1));
  EXPECT_TRUE(journal.pending().empty());
  EXPECT_EQ(journal.sessions(), std::vector<std::string>{id(1)});
  ASSERT_EQ(journal.owed().size(), 1u);
  EXPECT_EQ(journal.owed().front().execution_time, 2.0);  // whole seconds on the wire
  journal.settle(id(1));
  EXPECT_TRUE(CommandJournal::open(path_).owed().empty());
}

TEST_F(CommandJournalTest, KeepsTheLatestThousandIds) {
  auto journal = CommandJournal::open(path_);
  for (int n = 0; n < 1200; ++n) journal.add_received(id(n));
  EXPECT_EQ(journal.received_ids().size(), CommandJournal::kMaxIds);
  EXPECT_FALSE(journal.was_received(id(199)));
  EXPECT_TRUE(journal.was_received(id(200)));
  EXPECT_TRUE(journal.was_received(id(1199)));
}

// Only the command ids in it are kept (journal_salvage.h): here, the one some entries quote.
TEST_F(CommandJournalTest, ACorruptFileIsSetAsideAndOnlyItsCommandIdsAreKept) {
  for (const char* bad :
       {"{not json", "[]", R"({"version":1,"received":["nope"]})", R"({"version":2})",
        R"({"version":"1"})", R"({"version":null})", R"({"version":1,"owed":[{"command_id":1}]})",
        R"({"version":1,"last_command_id":7})", R"({"version":1,"continuous":[]})",
        R"({"version":1,"continuous":{"command_id":"x","combined_config":{}}})",
        R"({"version":1,"continuous":{"command_id":"00000000-0000-4000-8000-000000000001"}})",
        R"({"version":1,"continuous":{"command_id":"00000000-0000-4000-8000-000000000001",)"
        R"("combined_config":{},"pids":[0]}})",
        R"({"version":1,"continuous":{"command_id":"00000000-0000-4000-8000-000000000001",)"
        R"("combined_config":{},"pids":"1"}})",
        R"({"version":1,"shut_down_cleanly":1})"}) {
    write(bad);
    auto journal = CommandJournal::open(path_);
    bool quotes_an_id = std::string_view(bad).find(id(1)) != std::string_view::npos;
    EXPECT_EQ(journal.received_ids().ids(),
              quotes_an_id ? std::vector<std::string>{id(1)} : std::vector<std::string>{})
        << bad;
    EXPECT_TRUE(journal.pending().empty() && journal.owed().empty() && !journal.continuous())
        << bad;
    EXPECT_TRUE(fs::exists(directory_ / "journal.json.corrupt")) << bad;
    fs::remove(directory_ / "journal.json.corrupt");
  }
}

TEST_F(CommandJournalTest, OrphanedSessionsAreOwedAFailureThatReplacesTheirStartReport) {
  auto journal = CommandJournal::open(path_);
  journal.add_received(id(1));
  journal.add_session(id(1));
  journal.record_completion(
      {id(1), "web-01", wire::CompletionStatus::kCompleted, 0, std::nullopt, std::nullopt});
  journal.add_received(id(2));  // accepted, waiting its turn when the agent died
  LeftByPreviousRun left = CommandJournal::open(path_).take_previous_run("web-01");
  EXPECT_EQ(left.failed, (std::vector<std::string>{id(1), id(2)}));
  EXPECT_FALSE(left.resume);
  EXPECT_FALSE(left.shut_down_cleanly);
  auto reread = CommandJournal::open(path_);
  EXPECT_TRUE(reread.sessions().empty());
  EXPECT_TRUE(reread.pending().empty());
  ASSERT_EQ(reread.owed().size(), 2u);
  EXPECT_EQ(reread.owed()[0].status, wire::CompletionStatus::kFailed);
  EXPECT_EQ(reread.owed()[0].error_message, "agent restarted during session");
  EXPECT_EQ(reread.owed()[1].error_message, "agent restarted before the command took effect");
  EXPECT_EQ(reread.executed_ids().back(), id(2));
}

// The continuous command in force is not an orphan: the next run gets it to resume, its start
// reported once (here before the agent died, so nothing is owed), while a one-shot that ran
// beside it is reported failed.
TEST_F(CommandJournalTest, TheContinuousCommandInForceIsHandedToTheNextRunNotFailed) {
  nlohmann::json config = {{"continuous", true}, {"duration", 60}, {"pids", {7, 9}}};
  {
    auto journal = CommandJournal::open(path_);
    journal.add_received(id(1));
    journal.add_session(id(1));
    journal.set_continuous({id(1), config, std::vector<int>{9}});
    journal.record_completion(
        {id(1), "web-01", wire::CompletionStatus::kCompleted, 0, std::nullopt, std::nullopt});
    journal.add_received(id(2));
    journal.add_session(id(2));
  }
  auto journal = CommandJournal::open(path_);
  LeftByPreviousRun left = journal.take_previous_run("web-01");
  EXPECT_EQ(left.failed, std::vector<std::string>{id(2)});
  ASSERT_TRUE(left.resume);
  EXPECT_EQ(*left.resume, (ContinuousCommand{id(1), config, std::vector<int>{9}}));
  EXPECT_FALSE(left.resume_completion_owed);
  EXPECT_FALSE(left.shut_down_cleanly);
  ASSERT_EQ(journal.owed().back().command_id, id(2));
  EXPECT_EQ(journal.owed().size(), 2u);  // the start of 1, still unacknowledged, and 2's failure

  journal.note_clean_shutdown();
  journal.end_continuous(id(2));  // not the one in force: nothing changes
  auto next = CommandJournal::open(path_).take_previous_run("web-01");
  EXPECT_TRUE(next.shut_down_cleanly);
  EXPECT_TRUE(next.failed.empty());
  EXPECT_TRUE(next.resume);
  journal.end_continuous(id(1));
  EXPECT_FALSE(CommandJournal::open(path_).take_previous_run("web-01").resume);
}

// Accepted, in force, but the agent died before its session started: the next run resumes it and
// reports its start then.
TEST_F(CommandJournalTest, AContinuousCommandThatNeverStartedIsResumedWithItsCompletionOwed) {
  {
    auto journal = CommandJournal::open(path_);
    journal.add_received(id(1));
    journal.set_continuous({id(1), {{"continuous", true}}, std::nullopt});
  }
  auto journal = CommandJournal::open(path_);
  LeftByPreviousRun left = journal.take_previous_run("web-01");
  EXPECT_TRUE(left.failed.empty());
  ASSERT_TRUE(left.resume);
  EXPECT_TRUE(left.resume_completion_owed);
  EXPECT_EQ(journal.pending(), std::vector<std::string>{id(1)});
  EXPECT_TRUE(journal.owed().empty());
}

}  // namespace
}  // namespace dormant::agent

namespace dormant::agent {
namespace {

TEST(CommandIdRing, KeepsTheNewestIdsOnceEachOldestFirst) {
  auto id = [](int n) {
    char text[40];
    std::snprintf(text, sizeof(text), "00000000-0000-4000-8000-%012d", n);
    return std::string(text);
  };
  CommandIdRing ring(3);
  EXPECT_TRUE(ring.empty());
  for (int n : {1, 2, 2, 3, 4, 5}) ring.push(id(n));
  ring.push("not-a-uuid");
  EXPECT_EQ(ring.ids(), (std::vector<std::string>{id(3), id(4), id(5)}));
  EXPECT_EQ(ring.front(), id(3));
  EXPECT_EQ(ring.back(), id(5));
  EXPECT_FALSE(ring.contains(id(2)));
  EXPECT_TRUE(ring.contains(id(4)));
  ring.push(id(4));
  EXPECT_EQ(ring.size(), 3u);
  EXPECT_EQ(ring.front(), id(3)) << "an id already there does not move";
}

}  // namespace
}  // namespace dormant::agent
