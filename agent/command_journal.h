// What the agent remembers across a restart, in one JSON file under --state-dir: the command ids
// it has received and executed (the server re-sends the current command on every heartbeat, and
// a restarted agent must not run it again), the commands accepted but not yet carried out and the
// sessions running now (both reported failed when the agent died meanwhile), the continuous
// command in force (resumed by the next agent: only a stop or a newer command ends it), and the
// completions the server has not yet acknowledged.
//
// Every change is written at once, atomically; a write that fails is logged and retried with the
// next change, and the agent goes on with what it holds in memory.
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/command_id_ring.h"
#include "common/result.h"
#include "heartbeat/delivery_queues.h"
#include "wire/protocol.h"

namespace dormant::agent {

// A continuous start command in force, as the next agent needs it to start it again.
struct ContinuousCommand {
  std::string command_id;
  nlohmann::json combined_config = nlohmann::json::object();
  // Set once process-level stops have taken pids out of the command's own.
  std::optional<std::vector<int>> pids;

  friend bool operator==(const ContinuousCommand&, const ContinuousCommand&) = default;
};

// What the previous run of the agent left, as the next one finds it.
struct LeftByPreviousRun {
  std::vector<std::string> failed;  // its sessions and accepted commands, now reported failed
  std::optional<ContinuousCommand> resume;
  bool resume_completion_owed = false;  // the previous run never reported its start
  bool shut_down_cleanly = false;       // it ended by SIGTERM, its sessions stopped
};

class CommandJournal final : public heartbeat::CompletionQueue {
 public:
  // Ids kept per list, as gProfiler keeps them; the oldest go first.
  static constexpr size_t kMaxIds = 1000;
  // Completions owed, at most; past it the oldest is dropped with a warning. With each one's
  // texts cut to kMaxCompletionText, the journal stays far below the size it may be read at.
  static constexpr size_t kMaxOwed = 1000;
  static constexpr size_t kMaxCompletionText = 2048;
  static constexpr size_t kMaxFileBytes = 8 << 20;

  // Reads `path` when it exists. A file that cannot be read or parsed, or is larger than
  // kMaxFileBytes, is moved aside to `path`.corrupt with an error logged, and the journal starts
  // with the command ids salvaged from it (journal_salvage.h) as received and executed.
  static CommandJournal open(std::filesystem::path path);

  bool was_received(std::string_view command_id) const;
  // Also the last command id, and pending until its completion is recorded.
  void add_received(const std::string& command_id);
  // The command has taken effect (or failed): executed, no longer pending, its completion owed;
  // one write for all three, so that a crash cannot keep one and lose another.
  void record_completion(wire::CommandCompletion completion);
  const std::vector<std::string>& pending() const { return pending_; }
  const CommandIdRing& received_ids() const { return received_; }
  const CommandIdRing& executed_ids() const { return executed_; }
  const std::optional<std::string>& last_command_id() const { return last_command_id_; }

  // The start commands whose sessions run now.
  void add_session(const std::string& command_id);
  void remove_session(const std::string& command_id);
  const std::vector<std::string>& sessions() const { return sessions_; }

  // The continuous command in force (one: a newer one replaces it), and its end for good.
  void set_continuous(ContinuousCommand command);
  void end_continuous(const std::string& command_id);
  const std::optional<ContinuousCommand>& continuous() const { return continuous_; }
  // The agent stopped its sessions and exits: written so that the next run can say so.
  void note_clean_shutdown();

  // Completions owed to the server, oldest first; one per command id (a newer one replaces it).
  void settle(const std::string& command_id) override;
  // Settles it, after handing it (as JSON) to what keep_rejected_with named, or to the log.
  void reject(const std::string& command_id, const std::string& why) override;
  using RejectedKeeper =
      std::function<void(const std::string& command_id, const std::string& completion_json)>;
  void keep_rejected_with(RejectedKeeper keep) { keep_rejected_ = std::move(keep); }
  const std::deque<wire::CommandCompletion>& owed() const { return owed_; }
  std::optional<wire::CommandCompletion> oldest_owed() const override {
    return owed_.empty() ? std::nullopt : std::optional(owed_.front());
  }

  // For what the previous run of the agent left undone: owes a failed completion for each
  // session it left running ("agent restarted during session") and each command it had accepted
  // but not carried out, and forgets them, except the continuous command in force, which is to be
  // resumed.
  LeftByPreviousRun take_previous_run(const std::string& hostname);

  const std::filesystem::path& path() const { return path_; }
  // Why the last write failed, while writes fail; "" once one succeeds.
  const std::string& write_error() const { return write_error_; }

 private:
  explicit CommandJournal(std::filesystem::path path) : path_(std::move(path)) {}
  Result<void> load(const std::string& text);
  void save();
  // record_completion without the write, for callers that record several.
  void record_unsaved(wire::CommandCompletion completion);
  // Adds it to the owed list, replacing one of the same command, within kMaxOwed.
  void owe(wire::CommandCompletion completion);
  void owe_failure(const std::string& command_id, const std::string& hostname,
                   const std::string& why);

  std::filesystem::path path_;
  CommandIdRing received_{kMaxIds};
  CommandIdRing executed_{kMaxIds};
  std::optional<std::string> last_command_id_;
  std::vector<std::string> pending_;
  std::vector<std::string> sessions_;
  std::optional<ContinuousCommand> continuous_;
  bool shut_down_cleanly_ = false;
  std::deque<wire::CommandCompletion> owed_;
  RejectedKeeper keep_rejected_;
  std::string write_error_;
};

}  // namespace dormant::agent
