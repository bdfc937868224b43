#include "agent/command_journal.h"

#include <algorithm>
#include <system_error>

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/json_text.h"
#include "heartbeat/protocol/ids.h"

namespace dormant::agent {
namespace {

constexpr int kFormatVersion = 1;
constexpr size_t kMaxFileBytes = 8 << 20;

Result<std::vector<std::string>> read_ids(const nlohmann::json& body, const char* key) {
  std::vector<std::string> ids;
  auto found = body.find(key);
  if (found == body.end()) return ids;
  if (!found->is_array()) return Error::invalid_argument(std::string(key) + " is not a list");
  for (const auto& item : *found) {
    if (!item.is_string() || !heartbeat::is_uuid(item.get_ref<const std::string&>())) {
      return Error::invalid_argument(std::string(key) + " holds " + item.dump(-1, ' ', true) +
                                     ", not a command id");
    }
    ids.push_back(item.get<std::string>());
  }
  return ids;
}

}  // namespace

CommandJournal CommandJournal::open(std::filesystem::path path) {
  CommandJournal journal(std::move(path));
  std::error_code missing;
  if (!std::filesystem::exists(journal.path_, missing)) return journal;
  Result<void> loaded = [&]() -> Result<void> {
    std::error_code error;
    if (std::filesystem::file_size(journal.path_, error) > kMaxFileBytes && !error) {
      return Error::invalid_argument("larger than 8 MiB");
    }
    auto text = read_file(journal.path_);
    if (!text) return std::move(text).take_error();
    return journal.load(*text);
  }();
  if (!loaded) {
    std::filesystem::path aside = journal.path_;
    aside += ".corrupt";
    std::error_code ignored;
    std::filesystem::rename(journal.path_, aside, ignored);
    spdlog::error(
        "the command journal {} cannot be read ({}); moved it to {} and starting with an empty "
        "one: the server's current command may run once more",
        journal.path_.string(), loaded.error().message(), aside.string());
    journal = CommandJournal(journal.path_);
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
    if (!last->is_string() || !heartbeat::is_uuid(last->get_ref<const std::string&>())) {
      return Error::invalid_argument("last_command_id is not a command id");
    }
    last_command_id_ = last->get<std::string>();
  }
  if (auto owed = body.find("owed"); owed != body.end()) {
    if (!owed->is_array()) return Error::invalid_argument("owed is not a list");
    for (const auto& item : *owed) {
      auto completion = heartbeat::parse_command_completion(item);
      if (!completion) return std::move(completion).take_error().with_context("owed completion");
      owed_.push_back(std::move(*completion));
    }
  }
  return {};
} catch (const nlohmann::json::exception& error) {
  return Error::invalid_argument(error.what());
}

void CommandJournal::save() {
  nlohmann::json owed = nlohmann::json::array();
  for (const auto& completion : owed_) owed.push_back(heartbeat::to_json(completion));
  nlohmann::json body = {
      {"version", kFormatVersion},
      {"received", received_.ids()},
      {"executed", executed_.ids()},
      {"last_command_id", last_command_id_ ? nlohmann::json(*last_command_id_) : nlohmann::json()},
      {"pending", pending_},
      {"sessions", sessions_},
      {"owed", std::move(owed)}};
  auto written = write_file_atomically(path_, json_text(body) + "\n", 0600);
  if (!written && !save_failing_) {
    spdlog::error("cannot write the command journal: {}; commands stay remembered in memory only",
                  written.error().message());
  } else if (written && save_failing_) {
    spdlog::info("the command journal {} is written again", path_.string());
  }
  save_failing_ = !written;
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

void CommandJournal::record_completion(heartbeat::CommandCompletion completion) {
  record_unsaved(std::move(completion));
  save();
}

void CommandJournal::record_unsaved(heartbeat::CommandCompletion completion) {
  executed_.push(completion.command_id);
  std::erase(pending_, completion.command_id);
  std::erase_if(owed_, [&](const auto& owed) { return owed.command_id == completion.command_id; });
  owed_.push_back(std::move(completion));
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

void CommandJournal::settle(const std::string& command_id) {
  auto erased =
      std::erase_if(owed_, [&](const auto& owed) { return owed.command_id == command_id; });
  if (erased > 0) save();
}

void CommandJournal::owe_failure(const std::string& command_id, const std::string& hostname,
                                 const std::string& why) {
  heartbeat::CommandCompletion failed;
  failed.command_id = command_id;
  failed.hostname = hostname;
  failed.status = heartbeat::CompletionStatus::kFailed;
  failed.error_message = why;
  record_unsaved(std::move(failed));
}

std::vector<std::string> CommandJournal::fail_orphaned_sessions(const std::string& hostname) {
  std::vector<std::string> sessions = std::move(sessions_);
  std::vector<std::string> pending = std::move(pending_);
  sessions_.clear();
  pending_.clear();
  std::vector<std::string> orphans;
  for (const auto& id : sessions) {
    owe_failure(id, hostname, "agent restarted during session");
    orphans.push_back(id);
  }
  for (const auto& id : pending) {
    if (std::find(orphans.begin(), orphans.end(), id) != orphans.end()) continue;
    owe_failure(id, hostname, "agent restarted before the command took effect");
    orphans.push_back(id);
  }
  if (!orphans.empty()) save();
  return orphans;
}

}  // namespace dormant::agent
