// The control server's state: hosts and their heartbeats, profiling requests, the commands they
// turn into (one current command per host and service, plus history), deliveries, completions
// and uploaded profiles. Two homes for it, with the same schema and the same SQL:
// - SQLite in WAL mode under a data directory, with profile files beside it: one server;
// - a PostgreSQL database, profile bodies included: any number of servers (replicas) at once,
//   none of which keeps anything of its own.
//
// Every operation is one transaction: when it returns success, what it wrote is committed, and
// survives a crash of the process (see SqliteDatabase::open for the power-loss caveat); a failure
// writes nothing. Safe to call from several threads. On PostgreSQL, operations on different
// connections run at once; two that concern the same host (its heartbeats on two replicas, a
// request for it, its completions) take turns under the host's lock (lock_host), so a command is
// delivered, and its completion recorded, once. One that meets a deadlock is run again.
//
// When the data directory is full or read-only, the operations that write (heartbeats, requests,
// completions, uploads) fail with WriteGate's refusal (is_storage_refusal) and change nothing;
// the reads go on. The first write that succeeds once space or write access is back ends it. A
// PostgreSQL server out of disk space answers the same refusal; one that cannot be reached fails
// every operation with kUnavailable until it is back.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "server/storage/command_rows.h"
#include "server/storage/connection_pool.h"
#include "server/storage/data_dir.h"
#include "server/storage/database.h"
#include "server/storage/inventory_rows.h"
#include "server/storage/known_stack_texts.h"
#include "server/storage/postgres_listener.h"
#include "server/storage/profile_bodies.h"
#include "server/storage/records.h"
#include "server/storage/rollup_plan.h"
#include "server/storage/rollups.h"
#include "server/storage/studio_records.h"
#include "server/storage/subscription_rows.h"
#include "server/storage/workload_rows.h"
#include "server/storage/write_gate.h"

namespace dormant::server::storage {

struct StoreOptions {
  Clock clock = [] { return std::chrono::system_clock::now(); };  // the server's clock
  size_t connections = 4;  // to PostgreSQL, used at once by as many threads; SQLite has one
  // How long an operation waits for a connection before it fails (kUnavailable: 503).
  std::chrono::milliseconds connection_wait{2000};
  // Room for profiles (profile_room): the most their compressed bodies may take, 0 for no cap;
  // and the free space uploads leave on the data directory's file system (SQLite only), so that
  // heartbeats, requests and completions still find room when uploads no longer do.
  int64_t max_profile_bytes = 0;
  uint64_t min_free_bytes = 0;
  // Rollups (rollup_records.h): how long each bucket size is kept, and the distinct stacks a
  // bucket holds (past them, samples are counted under kStacksPastCap).
  RollupRetention rollup_retention;
  size_t rollup_max_stacks = size_t{1} << 20;
  // What Performance Studio's UI may keep: past these, a save is refused, not a row deleted.
  int64_t max_saved_filters_per_service = 1000;
  int64_t max_saved_filters = 10'000;
  int64_t max_snapshots = 10'000;
};

// What one expire_before() deleted.
struct ExpiredRows {
  int64_t profiles = 0;
  int64_t commands = 0;  // history: current commands are never deleted
  int64_t requests = 0;
  int64_t args = 0;  // additional_args objects no request or command refers to any more
};

// A host's part of a request, as planned (server/control): what the request reports of it, and
// the command it is given; none when its command stays.
struct PlannedHost {
  HostPlan plan;
  std::optional<CommandRow> row;
};

// Plans one host of a request from its current command, read under the host's lock.
using PlanHost =
    std::function<PlannedHost(const std::string& hostname, const std::optional<PidList>& pids,
                              const std::optional<CommandRow>& current, TimePoint now)>;

// What a request writes with itself, in the transaction that records it.
struct RequestWrites {
  std::optional<Subscription> subscribe;        // created_at is set when it is written
  std::optional<SubscriptionSpec> unsubscribe;  // ends the service's subscriptions it names
  bool opt_out = false;  // takes the request's hosts out of the service's subscriptions
};

// What a heartbeat reads for its share of the subscriptions, in its transaction and under its
// host's lock: the active subscriptions of its service that the host is not opted out of (oldest
// first, never empty), the host's current command and, on demand, its inventory and a request.
struct SubscriptionReads {
  const std::string& hostname;
  const std::string& service;
  TimePoint now;
  const std::vector<HostSubscription>& subscriptions;
  const std::optional<CommandRow>& current;
  // The host's inventory as this heartbeat left it.
  std::function<Result<std::optional<HostInventory>>()> inventory;
  std::function<Result<std::optional<ProfilingRequestRecord>>(const std::string& request_id)>
      request;
};
// The command a heartbeat's host is to follow now, or nullopt to leave its current one.
using FollowSubscriptions =
    std::function<Result<std::optional<PlannedHost>>(const SubscriptionReads&)>;

class Store {
 public:
  // Opens the store in `data_dir`, creating it when missing: takes the directory's lock (one
  // server per directory), opens the database, brings its schema up to date, and removes
  // profile files that a crash left without a row.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& data_dir,
                                             StoreOptions options = {});
  // Connects to the PostgreSQL database at `url` and brings its schema up to date, once however
  // many servers start at the same moment.
  static Result<std::unique_ptr<Store>> open_postgres(const std::string& url,
                                                      StoreOptions options = {});

  static constexpr size_t kHostsPerTransaction = 500;
  // About what the rows of one host of a request take, for the space check before a request.
  static constexpr uint64_t kBytesPerTargetHost = 512;

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Upserts the host's row and its inventory, lets `follow` give it a command from its service's
  // subscriptions, and returns its current command, whatever the command's status, as
  // Performance Studio does: the agent de-duplicates by id. The first heartbeat that carries a
  // pending command marks it sent and records its delivery.
  Result<HeartbeatAnswer> record_heartbeat(const HostHeartbeat& heartbeat,
                                           const FollowSubscriptions& follow = {});

  // The host's current command, as record_heartbeat answers it (a pending one is delivered), for
  // a heartbeat recorded before and held since (a long-poll): the host's row, inventory and
  // subscriptions are not written again.
  Result<HeartbeatAnswer> deliver_current(const std::string& hostname, const std::string& service);

  // Records `request` (made at the store's clock) and gives every target host the command `plan`
  // chooses from its current one. With dry_run, returns the same outcome and writes nothing.
  //
  // The hosts are taken kHostsPerTransaction at a time, each batch in a transaction of its own,
  // so that heartbeats get through between them; the request is recorded with the first, with
  // `writes`. A request whose rows would not fit in the space left is refused before its first
  // batch; should a later batch fail all the same, the hosts before it keep their commands and
  // the error says how many there were.
  Result<SubmitOutcome> submit(ProfilingRequestRecord request, bool dry_run, const PlanHost& plan,
                               const RequestWrites& writes = {});

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

  // The stacks of a service over a range, from its rollups: the buckets plan_buckets() picks
  // for the range, now, and the retention.
  Result<RollupView> read_rollup(const RollupQuery& query);
  // The first start and the last end of the profiles of `service` that `filter` matches in
  // [since, until), from the rollups; none when there are none.
  Result<std::optional<std::pair<TimePoint, TimePoint>>> data_span(
      const std::string& service, const std::optional<LabelFilter>& filter, TimePoint since,
      TimePoint until);
  // The texts of the stacks `ids` (by id) that `service` keeps, by id.
  Result<std::vector<std::pair<StackId, std::string>>> stack_texts(const std::string& service,
                                                                   std::span<const StackId> ids);
  // The samples of each label key of `service` in [since, until), from its rollups.
  Result<std::map<LabelKey, int64_t>> label_samples(const std::string& service, TimePoint since,
                                                    TimePoint until);
  // The query's range in slots of `slot_ms` (rollups.h), read from the coarsest bucket size whose
  // width divides the slot and whose retention still keeps the range's start; minutes where none
  // does.
  Result<std::vector<RollupSlot>> read_rollup_slots(const RollupQuery& query, int64_t slot_ms,
                                                    const StackClasses* classes = nullptr);

  // What Performance Studio's web UI reads besides flamegraphs (studio_records.h).
  Result<std::vector<HostSlotMetrics>> upload_metrics(const UploadMetricsQuery& query);
  Result<std::vector<ServiceHost>> service_hosts(TimePoint since);
  Result<std::vector<ServiceDataSpan>> service_data_spans(TimePoint since);
  // Saved filters: kInvalidArgument past StoreOptions' cap; false: no such filter.
  Result<int64_t> save_filter(const SavedFilter& filter);
  Result<bool> replace_filter(int64_t id, const std::string& filter);
  Result<bool> delete_filter(int64_t id);
  Result<std::vector<SavedFilter>> saved_filters(const std::string& service);
  // Snapshots: kInvalidArgument past StoreOptions' cap.
  Result<int64_t> save_snapshot(const Snapshot& snapshot);
  Result<std::optional<Snapshot>> find_snapshot(int64_t id);

  // Profiles stored before rollups existed, up to `limit`, oldest first: each to be added with
  // add_to_rollups().
  Result<std::vector<int64_t>> profiles_not_rolled_up(int64_t limit);
  // Adds a stored profile to the rollups, once: false when it was already. Without a rollup
  // (its text unreadable), only marks it done.
  Result<bool> add_to_rollups(int64_t gpid, const ProfileRollup* rollup,
                              const std::string& instance_type);
  // Compacts, service by service, the hours and days that are over from their finer buckets
  // (rollups.h), up to `most` buckets; returns how many.
  Result<int64_t> compact_rollups(int64_t most = INT64_MAX);
  // Deletes what the rollups keep past its retention, up to `batch` rows of each kind.
  Result<int64_t> expire_rollups(int64_t batch);

  // Why an upload of `incoming_bytes` would take more room than profiles have (StoreOptions),
  // or nullopt when it fits.
  Result<std::optional<std::string>> profile_room(int64_t incoming_bytes);

  // The hosts and pids that a scope and its selectors pick now (target_rows.h).
  Result<TargetHosts> resolve_targets(const TargetQuery& query);

  // hostname → the perf events it supports, for every host of `service`.
  Result<std::map<std::string, std::vector<std::string>>> perf_events_of(
      const std::string& service);

  // The active hosts, their current commands and inventories (workload_rows.h).
  Result<WorkloadSnapshot> workload_snapshot(const SnapshotQuery& query);
  // Reads the processes of `containers` (indices in snapshot.containers) into a snapshot read
  // before.
  Result<void> read_processes(WorkloadSnapshot& snapshot, const std::vector<size_t>& containers);

  // Subscriptions, active first, newest first.
  // Active first, newest first; `offset` of them skipped (a next page).
  Result<std::vector<Subscription>> list_subscriptions(int64_t limit = 1000, int64_t offset = 0);

  // The hosts that sent a heartbeat, with their current commands.
  Result<std::vector<HostRecord>> list_hosts(const HostFilter& filter = {});
  // Newest first; with history unless the filter asks for current commands only.
  Result<std::vector<Command>> list_commands(const CommandFilter& filter);
  // kNotFound for an unknown id.
  Result<Command> get_command(const std::string& command_id);
  Result<ProfilingRequestRecord> get_request(const std::string& request_id);
  // The additional_args object stored under a command's args_digest; kNotFound where none is.
  Result<nlohmann::json> get_args(const std::string& digest);

  // Calls `changed` with the host and service of every command committed from now on, by this
  // store or, on PostgreSQL, by any store on the database; `missed` when some may have been lost
  // (the connection that listens for them broke and is back). From another thread. Empty
  // functions: no more calls once it returns.
  using CommandsChanged =
      std::function<void(const std::string& hostname, const std::string& service)>;
  void on_commands(CommandsChanged changed, std::function<void()> missed);

  // Deletes up to `batch` of each: profiles received, commands replaced (history) and requests
  // made before `cutoff`, requests only once no command carries them out. Each kind in its own
  // short transaction, so that heartbeats never wait long behind it.
  Result<ExpiredRows> expire_before(TimePoint cutoff, int64_t batch);
  // Deletes up to `batch` hosts last heard from before `cutoff`; their commands stay.
  Result<int64_t> expire_hosts_before(TimePoint cutoff, int64_t batch);

  Dialect dialect() const { return pool_->dialect(); }
  // The server's clock, at the precision times are stored with.
  TimePoint now() const { return current_time(); }
  // The data directory or the database, for messages.
  const std::string& location() const { return pool_->location(); }

 private:
  Store(std::optional<DataDir> dir, std::unique_ptr<ConnectionPool> pool, StoreOptions options);

  // Runs `operation` with a leased connection, again when the database aborted it for a
  // concurrent transaction (kConflict: a deadlock), a few times with a short random pause.
  template <typename Operation>
  auto with_connection(Operation operation) -> decltype(operation(std::declval<Database&>()));

  // The clock, at the millisecond precision times are stored with.
  TimePoint current_time() const { return from_unix_ms(to_unix_ms(clock_())); }

  Result<SubmitOutcome> submit_in_batches(ProfilingRequestRecord request, bool dry_run,
                                          const PlanHost& plan, const RequestWrites& writes);

  // The gate's answer before a write of some `bytes`; always yes on PostgreSQL.
  Result<void> check_writable(uint64_t bytes = 0);
  // The buckets a view of `service` over [from, to) reads, now, in `db`'s transaction.
  Result<BucketPlan> plan_of(Database& db, const std::string& service, TimePoint from,
                             TimePoint to) const;
  // A write operation's result, told to the gate: a failure for lack of space or of write access
  // becomes the gate's refusal; a success that wrote something ends the refusals.
  template <typename T>
  Result<T> settle(Result<T> result, bool wrote = true);

  std::optional<DataDir> dir_;  // SQLite's: locked while the store is open
  std::unique_ptr<ConnectionPool> pool_;
  SelectorCache selectors_;  // subscriptions' selectors, parsed once
  std::unique_ptr<ProfileBodies> bodies_;
  std::unique_ptr<WriteGate> gate_;  // null on PostgreSQL, whose errors say when its disk is full
  Clock clock_;
  int64_t max_profile_bytes_;
  uint64_t min_free_bytes_;
  RollupRetention rollup_retention_;
  size_t rollup_max_stacks_;
  int64_t max_saved_filters_per_service_;
  int64_t max_saved_filters_;
  int64_t max_snapshots_;
  KnownStackTexts known_texts_;
  std::string postgres_url_;          // empty on SQLite
  CommandsChanged commands_changed_;  // SQLite: called after the commit
  std::unique_ptr<PostgresListener> listener_;
};

}  // namespace dormant::server::storage
