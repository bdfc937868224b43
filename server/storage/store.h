// The control server's state: hosts and their heartbeats, profiling requests, the commands they
// turn into (one current command per host and service, plus history), deliveries, completions
// and uploaded profiles. SQLite in WAL mode under the data directory, with profile files beside
// it.
//
// Every operation is one transaction: when it returns success, what it wrote is committed, and
// survives a crash of the process (see Database::open for the power-loss caveat); a failure
// writes nothing. Safe to call from several threads: operations run one at a time.
//
// When the data directory is full or read-only, the operations that write (heartbeats, requests,
// completions, uploads) fail with WriteGate's refusal (is_storage_refusal) and change nothing;
// the reads go on. The first write that succeeds once space or write access is back ends it.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/data_dir.h"
#include "server/storage/database.h"
#include "server/storage/profile_files.h"
#include "server/storage/records.h"
#include "server/storage/write_gate.h"

namespace dormant::server::storage {

struct StoreOptions {
  Clock clock = [] { return std::chrono::system_clock::now(); };  // the server's clock
};

class Store {
 public:
  // Opens the store in `data_dir`, creating it when missing: takes the directory's lock (one
  // server per directory), opens the database, brings its schema up to date, and removes
  // profile files that a crash left without a row.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& data_dir,
                                             StoreOptions options = {});

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Upserts the host's row and returns its current command, whatever the command's status, as
  // Performance Studio does: the agent de-duplicates by id. The first heartbeat that carries a
  // pending command marks it sent and records its delivery.
  Result<HeartbeatAnswer> record_heartbeat(const HostHeartbeat& heartbeat);

  // Records the request and gives every target host its next command (see command_plan.h for
  // the merge rules). With dry_run, returns the same outcome and writes nothing.
  Result<SubmitOutcome> submit_start(const StartRequest& request);
  Result<SubmitOutcome> submit_stop(const StopRequest& request);

  // Accepts the first report of a delivered command from the host it was sent to; any other
  // report is refused with the reason (an outcome, not an error).
  Result<CompletionOutcome> record_completion(const CompletionReport& report);

  // Stores the collapsed text gzip-compressed; the file is fsynced before its row is committed.
  // Returns the new profile's gpid.
  Result<int64_t> store_profile(const ProfileUpload& upload);
  // The collapsed text as uploaded. kNotFound for an unknown gpid.
  Result<std::string> read_profile(int64_t gpid);
  Result<StoredProfile> get_profile(int64_t gpid);
  Result<std::vector<StoredProfile>> list_profiles(const ProfileFilter& filter);

  // Every host that sent a heartbeat, with its current command.
  Result<std::vector<HostRecord>> list_hosts(const std::optional<std::string>& service_name = {});
  // Newest first; with history unless the filter asks for current commands only.
  Result<std::vector<Command>> list_commands(const CommandFilter& filter);
  // kNotFound for an unknown id.
  Result<Command> get_command(const std::string& command_id);
  Result<ProfilingRequestRecord> get_request(const std::string& request_id);

  const std::filesystem::path& data_dir() const { return dir_.root(); }

 private:
  Store(DataDir dir, std::unique_ptr<Database> db, Clock clock);

  // The clock, at the millisecond precision times are stored with.
  TimePoint current_time() const { return from_unix_ms(to_unix_ms(clock_())); }

  // Records `request` and gives each of its hosts the command `plan` chooses.
  template <typename PlanHost>
  Result<SubmitOutcome> submit(ProfilingRequestRecord request, bool dry_run, PlanHost plan);

  // A write operation's result, told to the gate: a failure for lack of space or of write access
  // becomes the gate's refusal; a success that wrote something ends the refusals.
  template <typename T>
  Result<T> settle(Result<T> result, bool wrote = true);

  std::mutex mutex_;  // one connection: one operation at a time
  DataDir dir_;
  std::unique_ptr<Database> db_;
  ProfileFiles files_;
  WriteGate gate_;
  Clock clock_;
};

}  // namespace dormant::server::storage
