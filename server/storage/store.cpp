#include "server/storage/store.h"

#include <algorithm>
#include <map>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/uuid.h"
#include "server/storage/command_plan.h"
#include "server/storage/command_rows.h"
#include "server/storage/host_rows.h"
#include "server/storage/migrations.h"
#include "server/storage/profile_rows.h"
#include "server/storage/request_checks.h"
#include "server/storage/request_rows.h"

namespace dormant::server::storage {
namespace {

template <typename T>
Result<T> in_context(Result<T> result, std::string_view context) {
  // A refusal for a full or read-only data directory is said the same whatever was refused.
  if (result || is_storage_refusal(result.error())) return result;
  return std::move(result).take_error().with_context(context);
}

std::string host_and_service(const std::string& hostname, const std::string& service_name) {
  return "host " + hostname + " of service " + service_name;
}

std::optional<CurrentCommand> planning_view(const std::optional<CommandRow>& row) {
  if (!row) return std::nullopt;
  return CurrentCommand{row->spec, row->command.status, row->command.completed_at};
}

// What a host's part of a request writes: its plan, and the new command's row.
struct PlannedHost {
  HostPlan plan;
  std::optional<CommandRow> row;
};

PlannedHost plan_host(const std::string& hostname, const std::string& service_name,
                      const HostChange& change, const std::optional<CommandRow>& current,
                      const std::string& request_id, TimePoint now) {
  PlannedHost planned{HostPlan{hostname, change.action, std::nullopt, std::nullopt}, std::nullopt};
  if (!change.spec) return planned;
  CommandRow row;
  row.spec = *change.spec;
  Command& command = row.command;
  command.command_id = random_uuid();
  command.hostname = hostname;
  command.service_name = service_name;
  command.type = row.spec.type;
  command.combined_config = build_combined_config(row.spec);
  command.status = CommandStatus::kPending;
  command.created_at = now;
  if (change.continues_current_requests && current) {
    command.request_ids = current->command.request_ids;
  }
  if (std::find(command.request_ids.begin(), command.request_ids.end(), request_id) ==
      command.request_ids.end()) {
    command.request_ids.push_back(request_id);
  }
  if (current) planned.plan.replaces = current->command.command_id;
  planned.plan.command = command;
  planned.row = std::move(row);
  return planned;
}

Result<void> write_host(Database& db, const PlannedHost& planned, TimePoint now) {
  if (!planned.row) return ok();
  const std::string& command_id = planned.row->command.command_id;
  if (planned.plan.replaces) {
    if (auto replaced = mark_replaced(db, *planned.plan.replaces, command_id, now); !replaced) {
      return replaced;
    }
  }
  return insert_command(db, *planned.row);
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& data_dir,
                                           StoreOptions options) {
  std::string doing = "opening the store in " + data_dir.string();
  auto dir = DataDir::open(data_dir);
  if (!dir) return std::move(dir).take_error().with_context(doing);
  auto db = Database::open(dir->database_file());
  if (!db) return std::move(db).take_error().with_context(doing);
  if (auto migrated = migrate(**db); !migrated) {
    return std::move(migrated).take_error().with_context(doing);
  }
  ProfileFiles files(dir->profiles_dir());
  auto referenced = profile_file_names(**db);
  if (!referenced) return std::move(referenced).take_error().with_context(doing);
  auto removed = files.remove_unreferenced(*referenced);
  if (!removed) return std::move(removed).take_error().with_context(doing);
  if (*removed > 0) {
    spdlog::info("removed {} profile file(s) that an interrupted upload left in {}", *removed,
                 dir->profiles_dir().string());
  }
  return std::unique_ptr<Store>(
      new Store(std::move(*dir), std::move(*db), std::move(options.clock)));
}

Store::Store(DataDir dir, std::unique_ptr<Database> db, Clock clock)
    : dir_(std::move(dir)),
      db_(std::move(db)),
      files_(dir_.profiles_dir()),
      gate_(dir_.root()),
      clock_(std::move(clock)) {}

template <typename T>
Result<T> Store::settle(Result<T> result, bool wrote) {
  if (!result) return gate_.failed(std::move(result).take_error());
  if (wrote) gate_.succeeded();
  return result;
}

Result<HeartbeatAnswer> Store::record_heartbeat(const HostHeartbeat& heartbeat) {
  if (heartbeat.hostname.empty() || heartbeat.service_name.empty()) {
    return Error::invalid_argument("a heartbeat needs a hostname and a service name");
  }
  if (heartbeat.ip_address.empty()) return Error::invalid_argument("ip_address is empty");
  if (!heartbeat.extra.is_object()) {
    return Error::invalid_argument("the heartbeat's extra fields must be a JSON object");
  }
  if (auto writable = gate_.check(); !writable) return std::move(writable).take_error();
  std::lock_guard lock(mutex_);
  TimePoint now = current_time();
  auto record = [&]() -> Result<HeartbeatAnswer> {
    auto transaction = Transaction::begin(*db_, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    if (auto upserted = upsert_host(*db_, heartbeat, now); !upserted) {
      return std::move(upserted).take_error();
    }
    auto current = find_current_command(*db_, heartbeat.hostname, heartbeat.service_name);
    if (!current) return std::move(current).take_error();
    if (!*current) {
      if (auto committed = transaction->commit(); !committed) {
        return std::move(committed).take_error();
      }
      return HeartbeatAnswer();
    }
    HeartbeatAnswer answer{std::move((*current)->command), false};
    Command& command = *answer.command;
    if (command.status == CommandStatus::kPending) {
      if (auto delivered = mark_delivered(*db_, command, now); !delivered) {
        return std::move(delivered).take_error();
      }
      if (auto assigned = advance_requests(*db_, command.command_id, RequestStatus::kAssigned);
          !assigned) {
        return std::move(assigned).take_error();
      }
      command.status = CommandStatus::kSent;
      command.sent_at = now;
      answer.first_delivery = true;
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return answer;
  };
  return settle(
      in_context(record(), "recording a heartbeat from " +
                               host_and_service(heartbeat.hostname, heartbeat.service_name)));
}

template <typename PlanHost>
Result<SubmitOutcome> Store::submit(ProfilingRequestRecord request, bool dry_run, PlanHost plan) {
  // A dry run writes nothing: it is answered whatever the state of the disk.
  if (!dry_run) {
    if (auto writable = gate_.check(); !writable) return std::move(writable).take_error();
  }
  std::lock_guard lock(mutex_);
  TimePoint now = current_time();
  request.created_at = now;
  // A dry run reads in a transaction too, for a consistent view, and never commits.
  auto transaction = Transaction::begin(*db_, Transaction::Kind::kWrite);
  if (!transaction) return std::move(transaction).take_error();

  std::vector<PlannedHost> planned;
  for (const auto& [hostname, pids] : request.target_hosts) {
    auto current = find_current_command(*db_, hostname, request.service_name);
    if (!current) return std::move(current).take_error();
    HostChange change = plan(pids, planning_view(*current), now);
    planned.push_back(
        plan_host(hostname, request.service_name, change, *current, request.request_id, now));
  }

  SubmitOutcome outcome{request.request_id, dry_run, {}};
  bool issues_commands = std::any_of(planned.begin(), planned.end(),
                                     [](const PlannedHost& host) { return host.row.has_value(); });
  // A request that changes nothing anywhere is done as soon as it is made.
  request.status = issues_commands ? RequestStatus::kPending : RequestStatus::kCompleted;
  if (!dry_run) {
    if (auto inserted = insert_request(*db_, request); !inserted) {
      return std::move(inserted).take_error();
    }
    for (const PlannedHost& host : planned) {
      if (auto written = write_host(*db_, host, now); !written) {
        return std::move(written).take_error().with_context(
            host_and_service(host.plan.hostname, request.service_name));
      }
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
  }
  for (PlannedHost& host : planned) outcome.hosts.push_back(std::move(host.plan));
  return outcome;
}

Result<SubmitOutcome> Store::submit_start(const StartRequest& start) {
  auto request = checked_start(start);
  if (!request) return std::move(request).take_error();
  ProfilingRequestRecord record;
  record.request_id = request->request_id.value_or(random_uuid());
  record.service_name = request->service_name;
  record.type = CommandType::kStart;
  record.target_hosts = request->target_hosts;
  record.continuous = request->continuous;
  record.duration_s = request->duration_s;
  record.frequency_hz = request->frequency_hz;
  record.mode = request->mode;
  record.additional_args = request->additional_args;

  CommandSpec requested;
  requested.type = CommandType::kStart;
  requested.continuous = request->continuous;
  requested.duration_s = request->duration_s;
  requested.frequency_hz = request->frequency_hz;
  requested.mode = request->mode;
  requested.additional_args = request->additional_args;
  auto plan = [&requested](const std::optional<PidList>& pids,
                           const std::optional<CurrentCommand>& current, TimePoint now) {
    CommandSpec for_host = requested;
    for_host.pids = pids;
    return plan_start(for_host, current, now);
  };
  std::string context = "submitting start request " + record.request_id;
  return settle(in_context(submit(std::move(record), request->dry_run, plan), context),
                !request->dry_run);
}

Result<SubmitOutcome> Store::submit_stop(const StopRequest& stop) {
  auto request = checked_stop(stop);
  if (!request) return std::move(request).take_error();
  ProfilingRequestRecord record;
  record.request_id = request->request_id.value_or(random_uuid());
  record.service_name = request->service_name;
  record.type = CommandType::kStop;
  record.target_hosts = request->target_hosts;
  record.stop_level = request->level;

  StopLevel level = request->level;
  auto plan = [level](const std::optional<PidList>& pids,
                      const std::optional<CurrentCommand>& current,
                      TimePoint now) { return plan_stop(level, pids, current, now); };
  std::string context = "submitting stop request " + record.request_id;
  return settle(in_context(submit(std::move(record), request->dry_run, plan), context),
                !request->dry_run);
}

Result<CompletionOutcome> Store::record_completion(const CompletionReport& report) {
  if (report.status != CommandStatus::kCompleted && report.status != CommandStatus::kFailed) {
    return Error::invalid_argument("a completion's status is completed or failed, not " +
                                   std::string(to_string(report.status)));
  }
  if (auto writable = gate_.check(); !writable) return std::move(writable).take_error();
  std::lock_guard lock(mutex_);
  TimePoint now = current_time();
  auto record = [&]() -> Result<CompletionOutcome> {
    auto transaction = Transaction::begin(*db_, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto found = find_command(*db_, report.command_id);
    if (!found) return std::move(found).take_error();
    if (!*found) return CompletionOutcome{false, "Command " + report.command_id + " is unknown"};
    const Command& command = (*found)->command;
    if (command.hostname != report.hostname) {
      return CompletionOutcome{false, "Command " + report.command_id + " was issued to host " +
                                          command.hostname + ", not to " + report.hostname};
    }
    if (command.status == CommandStatus::kPending) {
      return CompletionOutcome{
          false, "Command " + report.command_id + " has not been delivered to " + report.hostname};
    }
    if (command.status == CommandStatus::kCompleted && command.type == CommandType::kStart &&
        report.status == CommandStatus::kFailed) {
      // The session began, then failed (the agent died during it): that is news to record.
      if (auto marked = mark_session_failed(*db_, report, now); !marked) {
        return std::move(marked).take_error();
      }
      if (auto committed = transaction->commit(); !committed) {
        return std::move(committed).take_error();
      }
      return CompletionOutcome{true,
                               "Failure of the session of " + report.command_id + " recorded"};
    }
    if (command.status != CommandStatus::kSent) {
      return CompletionOutcome{false, "Command " + report.command_id + " was already reported " +
                                          std::string(to_string(command.status)) +
                                          "; the first report stands"};
    }
    if (auto marked = mark_reported(*db_, report, now); !marked) {
      return std::move(marked).take_error();
    }
    RequestStatus outcome = report.status == CommandStatus::kCompleted ? RequestStatus::kCompleted
                                                                       : RequestStatus::kFailed;
    if (auto advanced = advance_requests(*db_, report.command_id, outcome); !advanced) {
      return std::move(advanced).take_error();
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return CompletionOutcome{true, "Command completion recorded for " + report.command_id};
  };
  auto outcome = in_context(record(), "recording the completion of command " + report.command_id);
  // A refused report writes nothing: it says nothing of the disk.
  bool wrote = outcome && outcome->accepted;
  return settle(std::move(outcome), wrote);
}

Result<int64_t> Store::store_profile(const ProfileUpload& upload) {
  if (upload.service_name.empty() || upload.hostname.empty()) {
    return Error::invalid_argument("a profile needs a service name and a hostname");
  }
  if (upload.end_time < upload.start_time) {
    return Error::invalid_argument("the profile ends before it starts");
  }
  if (auto writable = gate_.check(); !writable) return std::move(writable).take_error();
  std::string context =
      "storing a profile from " + host_and_service(upload.hostname, upload.service_name);
  // Compressing and fsyncing take long: outside the lock, so heartbeats do not wait for them.
  auto written = files_.write(upload.collapsed);
  if (!written) return gate_.failed(std::move(written).take_error().with_context(context));

  std::lock_guard lock(mutex_);
  ProfileRow row;
  row.profile.service_name = upload.service_name;
  row.profile.hostname = upload.hostname;
  row.profile.start_time = upload.start_time;
  row.profile.end_time = upload.end_time;
  row.profile.received_at = current_time();
  row.profile.raw_size = static_cast<int64_t>(upload.collapsed.size());
  row.profile.compressed_size = written->compressed_size;
  row.file_name = written->file_name;
  auto insert = [&]() -> Result<int64_t> {
    auto transaction = Transaction::begin(*db_, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto gpid = insert_profile(*db_, row);
    if (!gpid) return gpid;
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return gpid;
  };
  auto gpid = insert();
  if (!gpid) files_.remove(written->file_name);
  return settle(in_context(std::move(gpid), context));
}

Result<std::string> Store::read_profile(int64_t gpid) {
  std::optional<ProfileRow> row;
  {
    std::lock_guard lock(mutex_);
    auto found = find_profile(*db_, gpid);
    if (!found) {
      return std::move(found).take_error().with_context("reading profile " + std::to_string(gpid));
    }
    row = std::move(*found);
  }
  if (!row) return Error(ErrorKind::kNotFound, "no profile has gpid " + std::to_string(gpid));
  return in_context(files_.read(row->file_name, row->profile.raw_size),
                    "reading profile " + std::to_string(gpid));
}

Result<StoredProfile> Store::get_profile(int64_t gpid) {
  std::lock_guard lock(mutex_);
  auto found = find_profile(*db_, gpid);
  if (!found) {
    return std::move(found).take_error().with_context("reading profile " + std::to_string(gpid));
  }
  if (!*found) return Error(ErrorKind::kNotFound, "no profile has gpid " + std::to_string(gpid));
  return std::move((*found)->profile);
}

Result<std::vector<StoredProfile>> Store::list_profiles(const ProfileFilter& filter) {
  std::lock_guard lock(mutex_);
  return in_context(find_profiles(*db_, filter), "listing profiles");
}

Result<std::vector<HostRecord>> Store::list_hosts(const std::optional<std::string>& service_name) {
  std::lock_guard lock(mutex_);
  auto list = [&]() -> Result<std::vector<HostRecord>> {
    auto transaction = Transaction::begin(*db_, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto hosts = find_hosts(*db_, service_name);
    if (!hosts) return hosts;
    CommandFilter current_only{std::nullopt, service_name, false, -1};
    auto commands = find_commands(*db_, current_only);
    if (!commands) return std::move(commands).take_error();
    std::map<std::pair<std::string, std::string>, Command> by_host;
    for (Command& command : *commands) {
      auto key = std::make_pair(command.hostname, command.service_name);
      by_host.emplace(std::move(key), std::move(command));
    }
    for (HostRecord& host : *hosts) {
      auto found = by_host.find({host.last_heartbeat.hostname, host.last_heartbeat.service_name});
      if (found != by_host.end()) host.current_command = std::move(found->second);
    }
    return hosts;
  };
  return in_context(list(), "listing hosts");
}

Result<std::vector<Command>> Store::list_commands(const CommandFilter& filter) {
  std::lock_guard lock(mutex_);
  return in_context(find_commands(*db_, filter), "listing commands");
}

Result<Command> Store::get_command(const std::string& command_id) {
  std::lock_guard lock(mutex_);
  auto found = find_command(*db_, command_id);
  if (!found) return std::move(found).take_error().with_context("reading command " + command_id);
  if (!*found) return Error(ErrorKind::kNotFound, "no command has id " + command_id);
  return std::move((*found)->command);
}

Result<ProfilingRequestRecord> Store::get_request(const std::string& request_id) {
  std::lock_guard lock(mutex_);
  auto found = find_request(*db_, request_id);
  if (!found) return std::move(found).take_error().with_context("reading request " + request_id);
  if (!*found) return Error(ErrorKind::kNotFound, "no profiling request has id " + request_id);
  return std::move(**found);
}

}  // namespace dormant::server::storage
