#include "agent/supervisor.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "agent/command_settings.h"

namespace dormant::agent {
namespace {

constexpr size_t kMaxQueuedOneShots = 10;

// Whether a session with these settings runs the CPU system profiler (ebpf or perf): the
// profiler type two sessions cannot share.
bool uses_system_profiler(const config::AgentConfig& config) {
  return config::cpu_profilers(config) != config::CpuProfilers::kNone;
}

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

}  // namespace

Supervisor::Supervisor(config::AgentConfig agent, std::string hostname, CommandJournal& journal,
                       Hooks hooks)
    : agent_(std::move(agent)),
      hostname_(std::move(hostname)),
      journal_(journal),
      hooks_(std::move(hooks)) {}

Supervisor::~Supervisor() = default;

Supervisor::State Supervisor::state() const {
  bool any = false;
  for (const auto& slot : slots_) {
    if (!slot) continue;
    if (slot->stopping) return State::kStopping;
    any = true;
  }
  return any || paused_continuous_ || !queued_one_shots_.empty() ? State::kRunning : State::kIdle;
}

std::vector<std::string> Supervisor::running_commands() const {
  std::vector<std::string> ids;
  for (const auto& slot : slots_) {
    if (slot && !slot->stopping) ids.push_back(slot->command.spec.command_id);
  }
  return ids;
}

bool Supervisor::nothing_left() const {
  return !slots_[kContinuous] && !slots_[kOneShot] && !paused_continuous_ &&
         queued_one_shots_.empty();
}

void Supervisor::on_command(const std::string& command_id,
                            const heartbeat::ProfilingCommand& command) {
  if (journal_.was_received(command_id)) {
    spdlog::trace("command {} again: already received", command_id);
    return;
  }
  journal_.add_received(command_id);
  auto received = Clock::now();
  if (shutting_down_) return complete(command_id, received, "the agent is shutting down");
  auto parsed = heartbeat::parse_combined_config(command.combined_config, command.command_type);
  if (!parsed) {
    spdlog::error("command {} refused: {}", command_id, parsed.error().message());
    return complete(command_id, received, parsed.error().message());
  }
  if (!parsed->applies_to(hostname_)) {
    spdlog::info("command {} is not for this host (target_hostnames)", command_id);
    return complete(command_id, received, "not run: target_hostnames does not name " + hostname_);
  }
  spdlog::info("command {}: {}", command_id, command.combined_config.dump());
  if (parsed->command_type == heartbeat::CommandType::kStop) {
    stop(command_id, received, *parsed);
  } else {
    start(command_id, received, *parsed);
  }
}

void Supervisor::start(const std::string& command_id, Clock::time_point received,
                       const heartbeat::CommandConfig& command) {
  auto settings = settings_for(agent_, command);
  if (!settings) {
    spdlog::error("command {} refused: {}", command_id, settings.error().message());
    return complete(command_id, received, settings.error().message());
  }
  Waiting waiting{SessionSpec{command_id, std::move(*settings)}, received, true};
  if (command.continuous) {
    if (auto& running = slots_[kContinuous]) {
      if (running->replacement) cancel(*running->replacement, "replaced by " + command_id);
      running->replacement = std::move(waiting);
      running->pause = false;
      if (!running->stopping) {
        spdlog::info("command {} replaces the continuous session of {}", command_id,
                     running->command.spec.command_id);
        running->stopping = true;
        running->session->request_stop();
      }
      return;
    }
    if (paused_continuous_) {
      cancel(*paused_continuous_, "replaced by " + command_id);
      journal_.remove_session(paused_continuous_->spec.command_id);
      paused_continuous_.reset();
    }
    bool one_shot_overlaps = slots_[kOneShot] &&
                             uses_system_profiler(slots_[kOneShot]->command.spec.config) &&
                             uses_system_profiler(waiting.spec.config);
    if (one_shot_overlaps || !queued_one_shots_.empty()) {
      spdlog::info("command {} waits for the one-shot session to end", command_id);
      paused_continuous_ = std::move(waiting);
      return;
    }
    return launch(kContinuous, std::move(waiting));
  }
  if (queued_one_shots_.size() >= kMaxQueuedOneShots) {
    return complete(
        command_id, received,
        "too many one-shot commands wait already (" + std::to_string(kMaxQueuedOneShots) + ")");
  }
  queued_one_shots_.push_back(std::move(waiting));
  schedule();
}

void Supervisor::stop(const std::string& command_id, Clock::time_point received,
                      const heartbeat::CommandConfig& command) {
  bool by_process = command.stop_level == heartbeat::StopLevel::kProcess && !command.pids.empty();
  auto without_stopped = [&](std::vector<int> pids) {
    std::erase_if(pids, [&](int pid) {
      return std::find(command.pids.begin(), command.pids.end(), pid) != command.pids.end();
    });
    return pids;
  };
  auto touched = [&](const SessionSpec& spec) {
    return !by_process || without_stopped(spec.config.pids) != spec.config.pids;
  };

  // What has not started yet.
  for (auto it = queued_one_shots_.begin(); it != queued_one_shots_.end();) {
    auto left = by_process ? without_stopped(it->spec.config.pids) : std::vector<int>();
    if (!touched(it->spec) || !left.empty()) {
      if (touched(it->spec)) it->spec.config.pids = std::move(left);
      ++it;
      continue;
    }
    cancel(*it, "stopped by " + command_id + " before it started");
    it = queued_one_shots_.erase(it);
  }
  if (paused_continuous_ && touched(paused_continuous_->spec)) {
    auto left =
        by_process ? without_stopped(paused_continuous_->spec.config.pids) : std::vector<int>();
    if (!left.empty()) {
      paused_continuous_->spec.config.pids = std::move(left);
    } else {
      cancel(*paused_continuous_, "stopped by " + command_id);
      journal_.remove_session(paused_continuous_->spec.command_id);
      paused_continuous_.reset();
    }
  }

  // What runs.
  int waiting_for = 0;
  bool whole_host_left = false;
  for (Slot slot : {kContinuous, kOneShot}) {
    auto& active = slots_[slot];
    if (!active) continue;
    if (!touched(active->command.spec)) {
      whole_host_left = whole_host_left || active->command.spec.config.pids.empty();
      continue;
    }
    auto left = by_process ? without_stopped(active->command.spec.config.pids) : std::vector<int>();
    if (!left.empty()) {
      Waiting restart = active->command;
      restart.spec.config.pids = std::move(left);
      restart.completion_owed = false;
      if (active->replacement) cancel(*active->replacement, "stopped by " + command_id);
      active->replacement = std::move(restart);
    } else {
      if (active->replacement) {
        cancel(*active->replacement, "stopped by " + command_id + " before it started");
        active->replacement.reset();
      }
      active->pause = false;
    }
    stop_slot(slot, command_id);
    ++waiting_for;
  }
  if (waiting_for > 0) {
    stops_[command_id] = PendingStop{received, waiting_for};
    return;
  }
  if (by_process && whole_host_left) {
    return complete(command_id, received,
                    "pids " + join_pids(command.pids) +
                        " are not profiled on their own: the running session profiles the whole "
                        "host, and a process-level stop cannot take pids out of it; stop the "
                        "host instead");
  }
  complete(command_id, received, std::nullopt);
  schedule();
}

void Supervisor::stop_slot(Slot slot, const std::string& stop_id) {
  Active& active = *slots_[slot];
  if (!stop_id.empty()) active.stop_ids.push_back(stop_id);
  if (active.stopping) return;
  active.stopping = true;
  active.session->request_stop();
}

void Supervisor::launch(Slot slot, Waiting command) {
  journal_.add_session(command.spec.command_id);
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
  bool same_command_goes_on =
      ended.pause || (ended.replacement && ended.replacement->spec.command_id == id);
  if (!same_command_goes_on) journal_.remove_session(id);
  if (ended.pause && !shutting_down_) {
    // What resumes after the one-shot is the command as a process-level stop during the pause
    // left it, and nothing is launched meanwhile.
    if (ended.replacement) {
      paused_continuous_ = std::move(*ended.replacement);
      ended.replacement.reset();
    } else {
      ended.command.completion_owed = false;
      paused_continuous_ = std::move(ended.command);
    }
  }
  if (ended.replacement && !shutting_down_) launch(slot, std::move(*ended.replacement));
  schedule();
}

bool Supervisor::overlaps_continuous(const SessionSpec& spec) const {
  const auto& continuous = slots_[kContinuous];
  return continuous && uses_system_profiler(continuous->command.spec.config) &&
         uses_system_profiler(spec.config);
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
    if (continuous && continuous->stopping) return;  // the one-shot waits for the teardown
    if (overlaps_continuous(queued_one_shots_.front().spec)) {
      spdlog::info("pausing the continuous session of {} for the one-shot command {}",
                   continuous->command.spec.command_id, queued_one_shots_.front().spec.command_id);
      continuous->pause = true;
      continuous->stopping = true;
      continuous->session->request_stop();
      return;
    }
    Waiting next = std::move(queued_one_shots_.front());
    queued_one_shots_.pop_front();
    launch(kOneShot, std::move(next));
  }
  if (!slots_[kContinuous] && paused_continuous_) {
    bool blocked =
        (slots_[kOneShot] && uses_system_profiler(slots_[kOneShot]->command.spec.config) &&
         uses_system_profiler(paused_continuous_->spec.config)) ||
        !queued_one_shots_.empty();
    if (!blocked) {
      spdlog::info("resuming the continuous session of {}", paused_continuous_->spec.command_id);
      Waiting resumed = std::move(*paused_continuous_);
      paused_continuous_.reset();
      launch(kContinuous, std::move(resumed));
    }
  }
  if (nothing_left() && hooks_.idle) hooks_.idle();
}

void Supervisor::cancel(Waiting& waiting, const std::string& why) {
  if (!waiting.completion_owed) return;
  waiting.completion_owed = false;
  complete(waiting.spec.command_id, waiting.received, why);
}

void Supervisor::complete(const std::string& command_id, Clock::time_point received,
                          std::optional<std::string> failure) {
  heartbeat::CommandCompletion completion;
  completion.command_id = command_id;
  completion.hostname = hostname_;
  completion.status =
      failure ? heartbeat::CompletionStatus::kFailed : heartbeat::CompletionStatus::kCompleted;
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
  if (paused_continuous_) {
    journal_.remove_session(paused_continuous_->spec.command_id);
    paused_continuous_.reset();
  }
  for (Slot slot : {kContinuous, kOneShot}) {
    auto& active = slots_[slot];
    if (!active) continue;
    if (active->replacement) {
      cancel(*active->replacement, "the agent is shutting down");
      active->replacement.reset();
    }
    active->pause = false;
    stop_slot(slot, "");
  }
  schedule();
}

}  // namespace dormant::agent
