// The agent's command state machine (docs/protocol.md, "How the stock agent runs commands"):
// turns the commands the server sends into sessions in two slots, continuous and one-shot. A new
// continuous start replaces the running one; a one-shot whose profilers overlap the continuous
// session's pauses it, and it resumes afterwards; a one-shot that arrives while another runs waits
// its turn. Unlike gProfiler: `stop_level: process` with pids takes only those pids out (a session
// left with none stops), and a stop is never held behind a one-shot. Every command gets one
// completion, when its effect is established. Runs on the io_context; sessions report back there.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "agent/command_journal.h"
#include "agent/session.h"
#include "config/agent_config.h"
#include "wire/command_config.h"
#include "wire/protocol.h"

namespace dormant::agent {

class Supervisor {
 public:
  using Clock = std::chrono::steady_clock;
  using LaunchSession = std::function<std::unique_ptr<SessionControl>(SessionSpec, SessionEvents)>;

  struct Hooks {
    LaunchSession launch;
    // A completion to deliver (the caller journals it and sends it).
    std::function<void(const wire::CommandCompletion&)> complete;
    // Every session has ended and nothing waits: the agent is back to Idle.
    std::function<void()> idle;
  };

  enum class State { kIdle, kRunning, kStopping };

  Supervisor(config::AgentConfig agent, std::string hostname, CommandJournal& journal, Hooks hooks);
  ~Supervisor();

  // A command from a heartbeat answer. One whose id was received before is ignored.
  void on_command(const std::string& command_id, const wire::ProfilingCommand& command);
  // Starts again the continuous command the previous run of the agent had in force (read from
  // the journal), with no completion unless `completion_owed`; `after` says how that run ended.
  void resume(const ContinuousCommand& command, bool completion_owed, const std::string& after);
  // Ends every session (SIGTERM); `done` runs once all have ended. The continuous command in force
  // stays in the journal, for the next run to resume.
  void shut_down(std::function<void()> done);

  State state() const;
  // The command ids of the sessions that run now.
  std::vector<std::string> running_commands() const;
  // What the profilers of the latest session said at start: for the agent's health report.
  const std::vector<ProfilerOutcome>& last_outcomes() const { return last_outcomes_; }
  // How the latest session's profilers stopped; empty until one has ended.
  const std::optional<TeardownReport>& last_teardown() const { return last_teardown_; }
  // The continuous command this run resumed, and how the previous run had ended; null if none.
  const nlohmann::json& resumed() const { return resumed_; }

 private:
  enum Slot { kContinuous = 0, kOneShot = 1 };
  static constexpr Slot kSlots[] = {kContinuous, kOneShot};

  // A start command not running now: queued, paused, or about to replace a session.
  struct Waiting {
    SessionSpec spec;
    Clock::time_point received;
    bool completion_owed = true;     // false when it ran before (resumed, restarted)
    nlohmann::json combined_config;  // as the server sent it: what a later run resumes
  };
  // What a slot's session is doing. Once stopping, what follows its end: the slot empties, the
  // replacement is launched in it, or the continuous command waits, paused, to resume as
  // `resume` (itself, or narrowed by a process-level stop) after the one-shot.
  struct RunningState {};
  struct StoppingThenNothing {};
  struct StoppingThenReplacement {
    Waiting replacement;
  };
  struct StoppingThenPause {
    Waiting resume;
  };
  struct StoppingForShutdown {};  // its command stays in force, for the next run
  using SlotState = std::variant<RunningState, StoppingThenNothing, StoppingThenReplacement,
                                 StoppingThenPause, StoppingForShutdown>;
  struct Active {
    Waiting command;
    std::unique_ptr<SessionControl> session;
    uint64_t generation = 0;
    SlotState state;
    std::vector<std::string> stop_ids;  // stop commands waiting for this session's end
    bool stopping() const;
  };
  struct PendingStop {
    Clock::time_point received;
    int sessions = 0;  // still to end
  };

  void start(const std::string& command_id, Clock::time_point received,
             const wire::CommandConfig& command, const nlohmann::json& combined_config);
  // A continuous command's session, launched now or when the one-shots are done.
  void start_continuous(Waiting waiting);
  void stop_host(const std::string& command_id, Clock::time_point received);
  void stop_processes(const std::string& command_id, Clock::time_point received,
                      const std::vector<int>& pids);
  // Completes the stop once the `sessions` it ended have ended.
  void finish_stop(const std::string& command_id, Clock::time_point received, int sessions);
  void launch(Slot slot, Waiting command);
  // Asks the slot's session to stop, then to go on into `next`; a replacement it was to become
  // is cancelled with `why`.
  void stop_slot(Slot slot, SlotState next, const std::string& why);
  void on_started(Slot slot, uint64_t generation, const SessionStarted& started);
  void on_ended(Slot slot, uint64_t generation, const SessionEnded& session);
  void schedule();
  // The one conflict rule: two sessions cannot both run the system profiler.
  bool blocked_by_slot(Slot slot, const SessionSpec& spec) const;
  void drop_paused(const std::string& why);
  // The journal's continuous command in force becomes `command`'s.
  void keep_in_force(const Waiting& command);
  void cancel(Waiting& waiting, const std::string& why);
  void complete(const std::string& command_id, Clock::time_point received,
                std::optional<std::string> failure);
  bool nothing_left() const;

  const config::AgentConfig agent_;
  const std::string hostname_;
  CommandJournal& journal_;
  Hooks hooks_;
  std::optional<Active> slots_[2];
  std::optional<Waiting> paused_continuous_;
  std::deque<Waiting> queued_one_shots_;
  std::map<std::string, PendingStop> stops_;
  uint64_t generations_ = 0;
  std::vector<ProfilerOutcome> last_outcomes_;
  std::optional<TeardownReport> last_teardown_;
  nlohmann::json resumed_;
  std::function<void()> shut_down_done_;
  bool shutting_down_ = false;
};

}  // namespace dormant::agent
