#include "agent/command_journal.h"

#include <algorithm>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "agent/journal_salvage.h"
#include "common/atomic_file.h"
#include "common/json_text.h"
#include "wire/ids.h"

namespace dormant::agent {
namespace {

constexpr int kFormatVersion = 1;

void cut_text(std::optional<std::string>& text, size_t max_bytes) {
  if (text && text->size() > max_bytes) {
    text->resize(max_bytes);
    *text += "... (cut)";
  }
}

Result<std::vector<std::string>> read_ids(const nlohmann::json& body, const char* key) {
  std::vector<std::string> ids;
  auto found = body.find(key);
  if (found == body.end()) return ids;
  if (!found->is_array()) return Error::invalid_argument(std::string(key) + " is not a list");
  for (const auto& item : *found) {
    if (!item.is_string() || !wire::is_uuid(item.get_ref<const std::string&>())) {
      return Error::invalid_argument(std::string(key) + " holds " + item.dump(-1, ' ', true) +
                                     ", not a command id");
    }
    ids.push_back(item.get<std::string>());
  }
  return ids;
}

// A pid list as the journal keeps it: 1 to 2^22 each (Linux's pid_max), at most as many as a
// command may name.
Result<std::vector<int>> read_pids(const nlohmann::json& list) {
  constexpr size_t kMaxPids = 4096;
  if (!list.is_array() || list.size() > kMaxPids) {
    return Error::invalid_argument("continuous.pids is not a list of up to 4096 pids");
  }
  std::vector<int> pids;
  for (const auto& pid : list) {
    if (!pid.is_number_integer() || pid.get<int64_t>() < 1 || pid.get<int64_t>() > (1 << 22)) {
      return Error::invalid_argument("continuous.pids holds " + json_text(pid) + ", not a pid");
    }
    pids.push_back(pid.get<int>());
  }
  return pids;
}

Result<ContinuousCommand> read_continuous(const nlohmann::json& entry) {
  if (!entry.is_object()) return Error::invalid_argument("continuous is not an object");
  ContinuousCommand command;
  auto id = entry.find("command_id");
  if (id == entry.end() || !id->is_string() || !wire::is_uuid(id->get_ref<const std::string&>())) {
    return Error::invalid_argument("continuous.command_id is not a command id");
  }
  command.command_id = id->get<std::string>();
  auto config = entry.find("combined_config");
  if (config == entry.end() || !config->is_object()) {
    return Error::invalid_argument("continuous.combined_config is not an object");
  }
  command.combined_config = *config;
  if (auto pids = entry.find("pids"); pids != entry.end() && !pids->is_null()) {
    auto read = read_pids(*pids);
    if (!read) return std::move(read).take_error();
    command.pids = std::move(*read);
  }
  return command;
}

nlohmann::json to_json(const ContinuousCommand& command) {
  return {{"command_id", command.command_id},
          {"combined_config", command.combined_config},
          {"pids", command.pids ? nlohmann::json(*command.pids) : nlohmann::json()}};
}

}  // namespace

CommandJournal CommandJournal::open(std::filesystem::path path) {
  CommandJournal journal(std::move(path));
  std::error_code missing;
  if (!std::filesystem::exists(journal.path_, missing)) return journal;
  Result<void> loaded = [&]() -> Result<void> {
    std::error_code error;
    if (std::filesystem::file_size(journal.path_, error) > kMaxFileBytes && !error) {
      return Error::invalid_argument("larger than " + std::to_string(kMaxFileBytes >> 20) + " MiB");
    }
    auto text = read_file(journal.path_);
    if (!text) return std::move(text).take_error();
    return journal.load(*text);
  }();
  if (!loaded) {
    std::filesystem::path aside = journal.path_;
    aside += ".corrupt";
    std::error_code not_moved;
    std::filesystem::rename(journal.path_, aside, not_moved);
    journal = CommandJournal(journal.path_);
    std::vector<std::string> ids = salvage_command_ids(not_moved ? journal.path_ : aside, kMaxIds);
    for (const auto& id : ids) {
      journal.received_.push(id);
      journal.executed_.push(id);
    }
    spdlog::error(
        "the command journal {} cannot be read ({}); moved it to {} and starting a new one with "
        "the {} command ids found in it, which will not run again",
        journal.path_.string(), loaded.error().message(), aside.string(), ids.size());
    journal.save();
  }
  return journal;
}

Result<void> CommandJournal::load(const std::string& text) try {
  nlohmann::json body = nlohmann::json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return Error::invalid_argument("not a JSON object");
  auto version = body.find("version");
  if (version == body.end() || !version->is_number_integer() ||
      version->get<int64_t>() != kFormatVersion) {
    return Error::invalid_argument("unknown format version " + (version == body.end()
                                                                    ? std::string("(none)")
                                                                    : json_text(*version)));
  }
  auto received = read_ids(body, "received");
  if (!received) return std::move(received).take_error();
  auto executed = read_ids(body, "executed");
  if (!executed) return std::move(executed).take_error();
  auto sessions = read_ids(body, "sessions");
  if (!sessions) return std::move(sessions).take_error();
  auto pending = read_ids(body, "pending");
  if (!pending) return std::move(pending).take_error();
  pending_ = std::move(*pending);
  for (const auto& id : *received) received_.push(id);
  for (const auto& id : *executed) executed_.push(id);
  sessions_ = std::move(*sessions);
  if (auto last = body.find("last_command_id"); last != body.end() && !last->is_null()) {
    if (!last->is_string() || !wire::is_uuid(last->get_ref<const std::string&>())) {
      return Error::invalid_argument("last_command_id is not a command id");
    }
    last_command_id_ = last->get<std::string>();
  }
  if (auto continuous = body.find("continuous");
      continuous != body.end() && !continuous->is_null()) {
    auto command = read_continuous(*continuous);
    if (!command) return std::move(command).take_error();
    continuous_ = std::move(*command);
  }
  if (auto clean = body.find("shut_down_cleanly"); clean != body.end()) {
    if (!clean->is_boolean()) return Error::invalid_argument("shut_down_cleanly is not a boolean");
    shut_down_cleanly_ = clean->get<bool>();
  }
  if (auto owed = body.find("owed"); owed != body.end()) {
    if (!owed->is_array()) return Error::invalid_argument("owed is not a list");
    for (const auto& item : *owed) {
      auto completion = wire::parse_command_completion(item);
      if (!completion) return std::move(completion).take_error().with_context("owed completion");
      owe(std::move(*completion));
    }
  }
  return {};
} catch (const nlohmann::json::exception& error) {
  return Error::invalid_argument(error.what());
}

void CommandJournal::save() {
  nlohmann::json owed = nlohmann::json::array();
  for (const auto& completion : owed_) owed.push_back(wire::to_json(completion));
  nlohmann::json body = {
      {"version", kFormatVersion},
      {"received", received_.ids()},
      {"executed", executed_.ids()},
      {"last_command_id", last_command_id_ ? nlohmann::json(*last_command_id_) : nlohmann::json()},
      {"pending", pending_},
      {"sessions", sessions_},
      {"continuous", continuous_ ? to_json(*continuous_) : nlohmann::json()},
      {"shut_down_cleanly", shut_down_cleanly_},
      {"owed", std::move(owed)}};
  auto written = write_file_atomically(path_, json_text(body) + "\n", 0600);
  if (!written && write_error_.empty()) {
    spdlog::error("cannot write the command journal: {}; commands stay remembered in memory only",
                  written.error().message());
  } else if (written && !write_error_.empty()) {
    spdlog::info("the command journal {} is written again", path_.string());
  }
  write_error_ = written ? "" : written.error().message();
}

bool CommandJournal::was_received(std::string_view command_id) const {
  return received_.contains(command_id);
}

void CommandJournal::add_received(const std::string& command_id) {
  received_.push(command_id);
  last_command_id_ = command_id;
  pending_.push_back(command_id);
  save();
}

void CommandJournal::record_completion(wire::CommandCompletion completion) {
  record_unsaved(std::move(completion));
  save();
}

void CommandJournal::record_unsaved(wire::CommandCompletion completion) {
  executed_.push(completion.command_id);
  std::erase(pending_, completion.command_id);
  owe(std::move(completion));
}

void CommandJournal::owe(wire::CommandCompletion completion) {
  std::erase_if(owed_, [&](const auto& owed) { return owed.command_id == completion.command_id; });
  cut_text(completion.error_message, kMaxCompletionText);
  cut_text(completion.results_path, kMaxCompletionText);
  owed_.push_back(std::move(completion));
  while (owed_.size() > kMaxOwed) {
    spdlog::warn(
        "more than {} command completions are owed to the server: dropped the oldest, of command "
        "{}",
        kMaxOwed, owed_.front().command_id);
    owed_.pop_front();
  }
}

void CommandJournal::add_session(const std::string& command_id) {
  if (std::find(sessions_.begin(), sessions_.end(), command_id) != sessions_.end()) return;
  sessions_.push_back(command_id);
  save();
}

void CommandJournal::remove_session(const std::string& command_id) {
  auto erased = std::erase(sessions_, command_id);
  if (erased > 0) save();
}

void CommandJournal::set_continuous(ContinuousCommand command) {
  if (continuous_ == command) return;
  continuous_ = std::move(command);
  save();
}

void CommandJournal::end_continuous(const std::string& command_id) {
  if (!continuous_ || continuous_->command_id != command_id) return;
  continuous_.reset();
  save();
}

void CommandJournal::note_clean_shutdown() {
  shut_down_cleanly_ = true;
  save();
}

void CommandJournal::settle(const std::string& command_id) {
  auto erased =
      std::erase_if(owed_, [&](const auto& owed) { return owed.command_id == command_id; });
  if (erased > 0) save();
}

void CommandJournal::reject(const std::string& command_id, const std::string& why) {
  auto found = std::find_if(owed_.begin(), owed_.end(),
                            [&](const auto& owed) { return owed.command_id == command_id; });
  if (found == owed_.end()) return;
  std::string completion = json_text(wire::to_json(*found));
  if (keep_rejected_) {
    spdlog::error("the server refused the completion of command {} for good: {}; kept aside",
                  command_id, why);
    keep_rejected_(command_id, completion);
  } else {
    spdlog::error("the server refused the completion of command {} for good: {}; it was {}",
                  command_id, why, completion);
  }
  settle(command_id);
}

void CommandJournal::owe_failure(const std::string& command_id, const std::string& hostname,
                                 const std::string& why) {
  wire::CommandCompletion failed;
  failed.command_id = command_id;
  failed.hostname = hostname;
  failed.status = wire::CompletionStatus::kFailed;
  failed.error_message = why;
  record_unsaved(std::move(failed));
}

LeftByPreviousRun CommandJournal::take_previous_run(const std::string& hostname) {
  LeftByPreviousRun left;
  left.shut_down_cleanly = std::exchange(shut_down_cleanly_, false);
  std::vector<std::string> sessions = std::exchange(sessions_, {});
  std::vector<std::string> pending = std::exchange(pending_, {});
  if (continuous_) {
    left.resume = continuous_;
    // Its start is reported once, by whichever run sees it take effect.
    left.resume_completion_owed =
        std::find(pending.begin(), pending.end(), continuous_->command_id) != pending.end();
    if (left.resume_completion_owed) pending_.push_back(continuous_->command_id);
  }
  auto resumed = [&](const std::string& id) {
    return left.resume && left.resume->command_id == id;
  };
  for (const auto& id : sessions) {
    if (resumed(id)) continue;
    owe_failure(id, hostname, "agent restarted during session");
    left.failed.push_back(id);
  }
  for (const auto& id : pending) {
    if (resumed(id) || std::find(left.failed.begin(), left.failed.end(), id) != left.failed.end()) {
      continue;
    }
    owe_failure(id, hostname, "agent restarted before the command took effect");
    left.failed.push_back(id);
  }
  if (!left.failed.empty() || left.shut_down_cleanly) save();
  return left;
}

}  // namespace dormant::agent
