#include "agent/supervisor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/command_settings.h"
#include "common/text.h"

namespace dormant::agent {
namespace {

constexpr size_t kMaxQueuedOneShots = 10;

std::string join_pids(const std::vector<int>& pids) {
  std::string text;
  for (int pid : pids) text += (text.empty() ? "" : ", ") + std::to_string(pid);
  return text;
}

std::string why_nothing_runs(const SessionStarted& started) {
  std::string reasons;
  for (const auto& outcome : started.profilers) {
    if (outcome.running) continue;
    reasons += (reasons.empty() ? "" : "; ") + outcome.name + ": " + outcome.reason;
  }
  return reasons.empty() ? "the command enables no profiler this agent has" : reasons;
}

// The pids `spec` keeps once `stopped` are taken out of it; nullopt when it profiles none of
// them (the whole host included).
std::optional<std::vector<int>> pids_left(const SessionSpec& spec,
                                          const std::vector<int>& stopped) {
  std::vector<int> left = spec.plan.profiling.target.pids;
  std::erase_if(left, [&](int pid) {
    return std::find(stopped.begin(), stopped.end(), pid) != stopped.end();
  });
  if (left.size() == spec.plan.profiling.target.pids.size()) return std::nullopt;
  return left;
}

}  // namespace

Supervisor::Supervisor(config::AgentConfig agent, std::string hostname, CommandJournal& journal,
                       Hooks hooks)
    : agent_(std::move(agent)),
      hostname_(std::move(hostname)),
      journal_(journal),
      hooks_(std::move(hooks)) {}

Supervisor::~Supervisor() = default;

bool Supervisor::Active::stopping() const { return !std::holds_alternative<RunningState>(state); }

Supervisor::State Supervisor::state() const {
  bool any = false;
  for (const auto& slot : slots_) {
    if (!slot) continue;
    if (slot->stopping()) return State::kStopping;
    any = true;
  }
  return any || paused_continuous_ || !queued_one_shots_.empty() ? State::kRunning : State::kIdle;
}

std::vector<std::string> Supervisor::running_commands() const {
  std::vector<std::string> ids;
  for (const auto& slot : slots_) {
    if (slot && !slot->stopping()) ids.push_back(slot->command.spec.command_id);
  }
  return ids;
}

bool Supervisor::nothing_left() const {
  return !slots_[kContinuous] && !slots_[kOneShot] && !paused_continuous_ &&
         queued_one_shots_.empty();
}

void Supervisor::on_command(const std::string& command_id, const wire::ProfilingCommand& command) {
  if (journal_.was_received(command_id)) {
    spdlog::trace("command {} again: already received", command_id);
    return;
  }
  journal_.add_received(command_id);
  auto received = Clock::now();
  if (shutting_down_) return complete(command_id, received, "the agent is shutting down");
  auto parsed = wire::parse_combined_config(command.combined_config, command.command_type);
  if (!parsed) {
    spdlog::error("command {} refused: {}", command_id, parsed.error().message());
    return complete(command_id, received, parsed.error().message());
  }
  if (!parsed->applies_to(hostname_)) {
    spdlog::info("command {} is not for this host (target_hostnames)", command_id);
    return complete(command_id, received, "not run: target_hostnames does not name " + hostname_);
  }
  // The server chooses the command's size; its log line is at most 1 KiB.
  spdlog::info("command {}: {}", command_id,
               shortened(command.combined_config.dump(-1, ' ', false,
                                                      nlohmann::json::error_handler_t::replace),
                         1024));
  if (parsed->command_type == wire::CommandType::kStart) {
    start(command_id, received, *parsed, command.combined_config);
  } else if (parsed->stop_level == wire::StopLevel::kProcess && !parsed->pids.empty()) {
    stop_processes(command_id, received, parsed->pids);
  } else {
    stop_host(command_id, received);
  }
}

void Supervisor::start(const std::string& command_id, Clock::time_point received,
                       const wire::CommandConfig& command, const nlohmann::json& combined_config) {
  auto plan = plan_for_command(agent_, command);
  if (!plan) {
    spdlog::error("command {} refused: {}", command_id, plan.error().message());
    return complete(command_id, received, plan.error().message());
  }
  Waiting waiting{SessionSpec{command_id, std::move(*plan)}, received, true, combined_config};
  if (!waiting.spec.plan.continuous) {
    if (queued_one_shots_.size() >= kMaxQueuedOneShots) {
      return complete(
          command_id, received,
          "too many one-shot commands wait already (" + std::to_string(kMaxQueuedOneShots) + ")");
    }
    queued_one_shots_.push_back(std::move(waiting));
    return schedule();
  }
  start_continuous(std::move(waiting));
}

void Supervisor::start_continuous(Waiting waiting) {
  const std::string& command_id = waiting.spec.command_id;
  keep_in_force(waiting);  // from now on, even if the agent dies before it runs
  if (slots_[kContinuous]) {
    spdlog::info("command {} replaces the continuous session of {}", command_id,
                 slots_[kContinuous]->command.spec.command_id);
    return stop_slot(kContinuous, StoppingThenReplacement{std::move(waiting)},
                     "replaced by " + command_id);
  }
  if (paused_continuous_) drop_paused("replaced by " + command_id);
  if (blocked_by_slot(kOneShot, waiting.spec) || !queued_one_shots_.empty()) {
    spdlog::info("command {} waits for the one-shot session to end", command_id);
    paused_continuous_ = std::move(waiting);
    return;
  }
  launch(kContinuous, std::move(waiting));
}

void Supervisor::resume(const ContinuousCommand& command, bool completion_owed,
                        const std::string& after) {
  auto received = Clock::now();
  auto refuse = [&](const std::string& why) {
    spdlog::error("the continuous command {} cannot be resumed: {}", command.command_id, why);
    journal_.end_continuous(command.command_id);
    if (completion_owed) complete(command.command_id, received, why);
  };
  auto parsed = wire::parse_combined_config(command.combined_config, "start");
  if (!parsed) return refuse(parsed.error().message());
  if (!parsed->continuous) return refuse("the journal holds it, but it is not continuous");
  auto plan = plan_for_command(agent_, *parsed);
  if (!plan) return refuse(plan.error().message());
  if (command.pids) plan->profiling.target.pids = *command.pids;
  spdlog::info("resuming the continuous session of {}: the previous agent {}", command.command_id,
               after);
  resumed_ = {{"command_id", command.command_id}, {"previous_agent", after}};
  start_continuous(Waiting{SessionSpec{command.command_id, std::move(*plan)}, received,
                           completion_owed, command.combined_config});
}

void Supervisor::stop_host(const std::string& command_id, Clock::time_point received) {
  for (auto& queued : queued_one_shots_) {
    cancel(queued, "stopped by " + command_id + " before it started");
  }
  queued_one_shots_.clear();
  if (paused_continuous_) drop_paused("stopped by " + command_id);
  int ending = 0;
  for (Slot slot : kSlots) {
    if (!slots_[slot]) continue;
    stop_slot(slot, StoppingThenNothing{}, "stopped by " + command_id + " before it started");
    slots_[slot]->stop_ids.push_back(command_id);
    ++ending;
  }
  finish_stop(command_id, received, ending);
}

void Supervisor::stop_processes(const std::string& command_id, Clock::time_point received,
                                const std::vector<int>& pids) {
  const std::string before_start = "stopped by " + command_id + " before it started";
  for (auto it = queued_one_shots_.begin(); it != queued_one_shots_.end();) {
    auto left = pids_left(it->spec, pids);
    if (left && left->empty()) {
      cancel(*it, before_start);
      it = queued_one_shots_.erase(it);
      continue;
    }
    if (left) it->spec.plan.profiling.target.pids = std::move(*left);
    ++it;
  }
  if (paused_continuous_) {
    auto left = pids_left(paused_continuous_->spec, pids);
    if (left && left->empty()) {
      drop_paused("stopped by " + command_id);
    } else if (left) {
      paused_continuous_->spec.plan.profiling.target.pids = std::move(*left);
    }
  }

  int ending = 0;
  bool whole_host_left = false;
  for (Slot slot : kSlots) {
    auto& active = slots_[slot];
    if (!active) continue;
    auto left = pids_left(active->command.spec, pids);
    if (!left) {
      whole_host_left = whole_host_left || active->command.spec.plan.profiles_the_whole_host();
      continue;
    }
    if (std::holds_alternative<StoppingThenNothing>(active->state)) {
      // Already ending for good: nothing to narrow; the stop completes with that end.
    } else if (left->empty()) {
      stop_slot(slot, StoppingThenNothing{}, before_start);
    } else {
      // The same command goes on with the pids left, after a pause if one was under way.
      Waiting narrowed = active->command;
      narrowed.spec.plan.profiling.target.pids = std::move(*left);
      narrowed.completion_owed = false;
      if (std::holds_alternative<StoppingThenPause>(active->state)) {
        stop_slot(slot, StoppingThenPause{std::move(narrowed)}, before_start);
      } else {
        stop_slot(slot, StoppingThenReplacement{std::move(narrowed)}, "stopped by " + command_id);
      }
    }
    active->stop_ids.push_back(command_id);
    ++ending;
  }
  if (ending == 0 && whole_host_left) {
    complete(command_id, received,
             "pids " + join_pids(pids) +
                 " are not profiled on their own: the running session profiles the whole host, "
                 "and a process-level stop cannot take pids out of it; stop the host instead");
    return schedule();
  }
  finish_stop(command_id, received, ending);
}

void Supervisor::finish_stop(const std::string& command_id, Clock::time_point received,
                             int sessions) {
  if (sessions > 0) {
    stops_[command_id] = PendingStop{received, sessions};
    return;
  }
  complete(command_id, received, std::nullopt);
  schedule();
}

void Supervisor::stop_slot(Slot slot, SlotState next, const std::string& why) {
  Active& active = *slots_[slot];
  if (auto* replacing = std::get_if<StoppingThenReplacement>(&active.state)) {
    cancel(replacing->replacement, why);
  }
  bool was_running = !active.stopping();
  active.state = std::move(next);
  if (was_running) active.session->request_stop();
}

void Supervisor::keep_in_force(const Waiting& command) {
  ContinuousCommand in_force{command.spec.command_id, command.combined_config, std::nullopt};
  if (!command.spec.plan.profiling.target.pids.empty())
    in_force.pids = command.spec.plan.profiling.target.pids;
  journal_.set_continuous(std::move(in_force));
}

void Supervisor::launch(Slot slot, Waiting command) {
  journal_.add_session(command.spec.command_id);
  if (slot == kContinuous) keep_in_force(command);
  uint64_t generation = ++generations_;
  SessionEvents events{
      [this, slot, generation](const SessionStarted& started) {
        on_started(slot, generation, started);
      },
      [this, slot, generation](const SessionEnded& ended) { on_ended(slot, generation, ended); }};
  slots_[slot] = Active{};
  slots_[slot]->generation = generation;
  SessionSpec spec = command.spec;
  slots_[slot]->command = std::move(command);
  slots_[slot]->session = hooks_.launch(std::move(spec), std::move(events));
}

void Supervisor::on_started(Slot slot, uint64_t generation, const SessionStarted& started) {
  auto& active = slots_[slot];
  if (!active || active->generation != generation) return;
  last_outcomes_ = started.profilers;
  if (!active->command.completion_owed) return;
  active->command.completion_owed = false;
  if (started.any_running) {
    complete(active->command.spec.command_id, active->command.received, std::nullopt);
  } else {
    complete(active->command.spec.command_id, active->command.received, why_nothing_runs(started));
  }
}

void Supervisor::on_ended(Slot slot, uint64_t generation, const SessionEnded& session) {
  auto& active = slots_[slot];
  if (!active || active->generation != generation) return;
  last_teardown_ = session.teardown;
  if (!session.profilers.empty()) last_outcomes_ = session.profilers;
  Active ended = std::move(*active);
  active.reset();
  ended.session.reset();  // the worker has finished: this does not wait
  const std::string& id = ended.command.spec.command_id;
  if (ended.command.completion_owed) {
    complete(id, ended.command.received, "the session ended before its profilers started");
  }
  for (const auto& stop_id : ended.stop_ids) {
    auto pending = stops_.find(stop_id);
    if (pending == stops_.end() || --pending->second.sessions > 0) continue;
    complete(stop_id, pending->second.received, std::nullopt);
    stops_.erase(pending);
  }
  if (auto* pause = std::get_if<StoppingThenPause>(&ended.state)) {
    // Nothing is launched meanwhile; the journal keeps the command, which resumes.
    paused_continuous_ = std::move(pause->resume);
  } else if (auto* next = std::get_if<StoppingThenReplacement>(&ended.state)) {
    if (next->replacement.spec.command_id != id) journal_.remove_session(id);
    launch(slot, std::move(next->replacement));
  } else {
    journal_.remove_session(id);
    // Stopped, or ended by itself (its profilers failed): nothing to resume. Only a shutdown
    // leaves the command in force.
    if (!std::holds_alternative<StoppingForShutdown>(ended.state)) journal_.end_continuous(id);
  }
  schedule();
}

bool Supervisor::blocked_by_slot(Slot slot, const SessionSpec& spec) const {
  const auto& active = slots_[slot];
  return active && active->command.spec.plan.uses_the_system_profiler() &&
         spec.plan.uses_the_system_profiler();
}

void Supervisor::schedule() {
  if (shutting_down_) {
    if (!slots_[kContinuous] && !slots_[kOneShot] && shut_down_done_) {
      auto done = std::move(shut_down_done_);
      shut_down_done_ = nullptr;
      done();
    }
    return;
  }
  if (!slots_[kOneShot] && !queued_one_shots_.empty()) {
    auto& continuous = slots_[kContinuous];
    if (continuous && continuous->stopping()) return;  // the one-shot waits for the teardown
    if (blocked_by_slot(kContinuous, queued_one_shots_.front().spec)) {
      spdlog::info("pausing the continuous session of {} for the one-shot command {}",
                   continuous->command.spec.command_id, queued_one_shots_.front().spec.command_id);
      Waiting resume = continuous->command;
      resume.completion_owed = false;
      stop_slot(kContinuous, StoppingThenPause{std::move(resume)}, "");
      return;
    }
    Waiting next = std::move(queued_one_shots_.front());
    queued_one_shots_.pop_front();
    launch(kOneShot, std::move(next));
  }
  if (!slots_[kContinuous] && paused_continuous_ && queued_one_shots_.empty() &&
      !blocked_by_slot(kOneShot, paused_continuous_->spec)) {
    spdlog::info("resuming the continuous session of {}", paused_continuous_->spec.command_id);
    Waiting resumed = std::move(*paused_continuous_);
    paused_continuous_.reset();
    launch(kContinuous, std::move(resumed));
  }
  if (nothing_left() && hooks_.idle) hooks_.idle();
}

void Supervisor::drop_paused(const std::string& why) {
  cancel(*paused_continuous_, why);
  journal_.remove_session(paused_continuous_->spec.command_id);
  journal_.end_continuous(paused_continuous_->spec.command_id);
  paused_continuous_.reset();
}

void Supervisor::cancel(Waiting& waiting, const std::string& why) {
  if (!waiting.completion_owed) return;
  waiting.completion_owed = false;
  complete(waiting.spec.command_id, waiting.received, why);
}

void Supervisor::complete(const std::string& command_id, Clock::time_point received,
                          std::optional<std::string> failure) {
  wire::CommandCompletion completion;
  completion.command_id = command_id;
  completion.hostname = hostname_;
  completion.status =
      failure ? wire::CompletionStatus::kFailed : wire::CompletionStatus::kCompleted;
  completion.execution_time = std::chrono::duration<double>(Clock::now() - received).count();
  completion.error_message = std::move(failure);
  if (completion.error_message) {
    spdlog::warn("command {} failed: {}", command_id, *completion.error_message);
  } else {
    spdlog::info("command {} done in {:.3f} s", command_id, completion.execution_time);
  }
  journal_.record_completion(completion);
  hooks_.complete(std::move(completion));
}

void Supervisor::shut_down(std::function<void()> done) {
  shutting_down_ = true;
  shut_down_done_ = std::move(done);
  for (auto& queued : queued_one_shots_) cancel(queued, "the agent is shutting down");
  queued_one_shots_.clear();
  // The continuous command stays in force: paused, or about to replace the running one, it is
  // what the next run resumes; its completion, if owed, is owed by that run.
  if (paused_continuous_) {
    keep_in_force(*paused_continuous_);
    journal_.remove_session(paused_continuous_->spec.command_id);
    paused_continuous_.reset();
  }
  if (auto& continuous = slots_[kContinuous]) {
    if (auto* next = std::get_if<StoppingThenReplacement>(&continuous->state)) {
      keep_in_force(next->replacement);
      continuous->state = StoppingForShutdown{};
    } else if (!std::holds_alternative<StoppingThenNothing>(continuous->state)) {
      stop_slot(kContinuous, StoppingForShutdown{}, "");
    }
  }
  if (slots_[kOneShot]) stop_slot(kOneShot, StoppingThenNothing{}, "the agent is shutting down");
  schedule();
}

}  // namespace dormant::agent
