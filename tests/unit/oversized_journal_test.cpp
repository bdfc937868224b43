// Attacks on the command journal: a server that never acknowledges completions while commands
// keep coming (the owed list grew without bound, and past 8 MiB the whole journal was discarded
// at start, so the current command ran again), and a journal left oversized or damaged. Bounds:
// the owed list and each completion's texts are capped, so the journal stays under the size it is
// read at; a journal that cannot be read still keeps every command id it holds, so no command
// runs twice.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "agent/command_journal.h"

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;

std::string id(int n) {
  char text[40];
  std::snprintf(text, sizeof(text), "00000000-0000-4000-8000-%012d", n);
  return text;
}

wire::CommandCompletion failed(int n, std::string why) {
  return {id(n), "web-01", wire::CompletionStatus::kFailed, 1, std::move(why), std::nullopt};
}

class OversizedJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fs::temp_directory_path() / ("dormant-big-journal-" + std::to_string(::getpid()));
    fs::create_directories(directory_);
    path_ = directory_ / "journal.json";
  }
  void TearDown() override { fs::remove_all(directory_); }

  fs::path directory_;
  fs::path path_;
};

TEST_F(OversizedJournalTest, AServerThatNeverAcknowledgesCannotGrowTheOwedListPastItsCap) {
  constexpr int kCommands = CommandJournal::kMaxOwed + 200;
  {
    auto journal = CommandJournal::open(path_);
    for (int n = 0; n < kCommands; ++n) {
      journal.add_received(id(n));
      journal.record_completion(failed(n, "perf failed"));
    }
    ASSERT_EQ(journal.owed().size(), CommandJournal::kMaxOwed);
    EXPECT_EQ(journal.owed().front().command_id, id(kCommands - CommandJournal::kMaxOwed))
        << "the oldest were dropped";
    EXPECT_EQ(journal.owed().back().command_id, id(kCommands - 1));

    // The largest a completion can make the journal: texts of a megabyte each are cut.
    auto before = fs::file_size(path_);
    auto huge = failed(kCommands, std::string(1 << 20, 'e'));
    huge.results_path = std::string(1 << 20, 'p');
    journal.record_completion(huge);
    auto after = fs::file_size(path_);
    EXPECT_LE(journal.owed().back().error_message->size(), CommandJournal::kMaxCompletionText + 16);
    EXPECT_LE(journal.owed().back().results_path->size(), CommandJournal::kMaxCompletionText + 16);
    // One short completion dropped, one of the largest added: a journal owing kMaxOwed of the
    // largest is still read whole.
    EXPECT_LT(before + (after - before) * CommandJournal::kMaxOwed, CommandJournal::kMaxFileBytes);
  }
  auto journal = CommandJournal::open(path_);
  EXPECT_FALSE(fs::exists(directory_ / "journal.json.corrupt")) << "read whole";
  EXPECT_EQ(journal.owed().size(), CommandJournal::kMaxOwed);
  EXPECT_TRUE(journal.was_received(id(kCommands - 1)));
}

// A journal over the size limit, as an agent without the cap left it: the owed list of months
// without acknowledgements, and the command the server still sends.
TEST_F(OversizedJournalTest, AnOversizedJournalKeepsItsCommandIds) {
  const std::string current = id(999'999);
  {
    nlohmann::json owed = nlohmann::json::array();
    for (int n = 0; n < 3000; ++n) {
      owed.push_back(nlohmann::json{{"command_id", id(n)},
                                    {"hostname", "web-01"},
                                    {"status", "failed"},
                                    {"execution_time", 1},
                                    {"error_message", std::string(4000, 'e')},
                                    {"results_path", nullptr}});
    }
    nlohmann::json body = {{"version", 1},
                           {"received", {id(2999), current}},
                           {"executed", {id(2999), current}},
                           {"last_command_id", current},
                           {"owed", std::move(owed)}};
    std::ofstream(path_) << body.dump();
  }
  ASSERT_GT(fs::file_size(path_), CommandJournal::kMaxFileBytes);
  {
    auto journal = CommandJournal::open(path_);
    EXPECT_TRUE(fs::exists(directory_ / "journal.json.corrupt"));
    EXPECT_TRUE(journal.was_received(current)) << "the server's current command must not run again";
    EXPECT_TRUE(journal.was_received(id(2999)));
    EXPECT_LT(fs::file_size(path_), CommandJournal::kMaxFileBytes) << "a new journal was written";
  }
  auto next_run = CommandJournal::open(path_);
  EXPECT_TRUE(next_run.was_received(current)) << "kept by the next run too";
}

TEST_F(OversizedJournalTest, ATruncatedJournalKeepsItsCommandIds) {
  {
    auto journal = CommandJournal::open(path_);
    for (int n = 0; n < 50; ++n) {
      journal.add_received(id(n));
      journal.record_completion(failed(n, "perf failed"));
    }
  }
  std::string text;
  {
    std::ifstream file(path_);
    text.assign(std::istreambuf_iterator<char>(file), {});
  }
  // Cut in the middle of the "received" list, as a full disk or a crash of old code could.
  size_t received = text.find("\"received\"");
  ASSERT_NE(received, std::string::npos);
  std::ofstream(path_, std::ios::trunc) << text.substr(0, received + 40 * 30);
  auto journal = CommandJournal::open(path_);
  EXPECT_TRUE(fs::exists(directory_ / "journal.json.corrupt"));
  for (int n = 0; n < 50; ++n) EXPECT_TRUE(journal.was_received(id(n))) << n;
}

}  // namespace
}  // namespace dormant::agent
