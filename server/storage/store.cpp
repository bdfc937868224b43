#include "server/storage/store.h"

#include <algorithm>
#include <map>
#include <random>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>

#include "server/storage/args_rows.h"
#include "server/storage/command_rows.h"
#include "server/storage/host_rows.h"
#include "server/storage/inventory_rows.h"
#include "server/storage/migrations.h"
#include "server/storage/postgres_database.h"
#include "server/storage/profile_rows.h"
#include "server/storage/request_rows.h"
#include "server/storage/rollup_plan.h"
#include "server/storage/rollup_rows.h"
#include "server/storage/rollups.h"
#include "server/storage/sqlite_database.h"
#include "server/storage/studio_rows.h"
#include "server/storage/subscription_rows.h"
#include "server/storage/target_rows.h"

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

Result<void> write_host(Database& db, const PlannedHost& planned, TimePoint now, ArgsWriter& args) {
  if (!planned.row) return ok();
  const std::string& command_id = planned.row->command.command_id;
  if (planned.plan.replaces) {
    if (auto replaced = mark_replaced(db, *planned.plan.replaces, command_id, now); !replaced) {
      return replaced;
    }
  }
  return insert_command(db, *planned.row, args);
}

// On PostgreSQL, tells every replica's listener at commit. A payload over NOTIFY's limit (8000
// bytes) goes empty: it wakes every held heartbeat.
Result<void> notify_command(Database& db, const std::string& hostname, const std::string& service) {
  if (db.dialect() != Dialect::kPostgres) return ok();
  constexpr size_t kMaxPayload = 7900;
  std::string payload = hostname + '\n' + service;
  if (payload.size() > kMaxPayload) payload.clear();
  auto notify = db.prepare("SELECT pg_notify(?1, ?2)");
  if (!notify) return std::move(notify).take_error();
  return notify->bind_all(kCommandsChannel, payload).run();
}

Result<void> write_with_request(Database& db, const ProfilingRequestRecord& request,
                                const RequestWrites& writes, TimePoint now) {
  if (writes.subscribe) {
    Subscription subscription = *writes.subscribe;
    subscription.created_at = now;
    if (auto inserted = insert_subscription(db, subscription); !inserted) return inserted;
  }
  if (writes.unsubscribe) {
    auto ended =
        end_subscriptions(db, request.service_name, *writes.unsubscribe, request.request_id, now);
    if (!ended) return ended;
  }
  if (!writes.opt_out) return ok();
  std::vector<std::string> hostnames;
  for (const auto& [hostname, pids] : request.target_hosts) hostnames.push_back(hostname);
  return opt_out_of_subscriptions(db, request.service_name, hostnames, now);
}

// The host's current command, as read in this transaction, into `answer`; a pending one is
// marked sent, and its requests assigned.
Result<void> deliver(Database& db, std::optional<CommandRow> current, TimePoint now,
                     HeartbeatAnswer& answer) {
  if (!current) return ok();
  answer.command = std::move(current->command);
  Command& command = *answer.command;
  if (command.status != CommandStatus::kPending) return ok();
  if (auto delivered = mark_delivered(db, command, now); !delivered) return delivered;
  if (auto assigned = advance_requests(db, command.command_id, RequestStatus::kAssigned);
      !assigned) {
    return assigned;
  }
  command.status = CommandStatus::kSent;
  command.sent_at = now;
  answer.first_delivery = true;
  return ok();
}

// The heartbeat's share of the subscriptions: the command `follow` gives the host, written.
// Returns whether it wrote one (the host's current command is then another).
Result<bool> follow_subscriptions(Database& db, const HostHeartbeat& heartbeat, TimePoint now,
                                  SelectorCache& selectors, const FollowSubscriptions& follow,
                                  const std::optional<CommandRow>& current) {
  const std::string& hostname = heartbeat.hostname;
  const std::string& service = heartbeat.service_name;
  auto subscriptions = subscriptions_for_host(db, service, hostname, selectors);
  if (!subscriptions) return std::move(subscriptions).take_error();
  if (subscriptions->empty()) return false;
  SubscriptionReads reads{
      hostname,
      service,
      now,
      *subscriptions,
      current,
      [&] { return read_host_inventory(db, hostname, service, now); },
      [&](const std::string& request_id) { return find_request(db, request_id); }};
  auto followed = follow(reads);
  if (!followed) return std::move(followed).take_error();
  if (!*followed || !(*followed)->row) return false;
  ArgsWriter args;
  if (auto written = write_host(db, **followed, now, args); !written) {
    return std::move(written).take_error();
  }
  if (auto notified = notify_command(db, hostname, service); !notified) {
    return std::move(notified).take_error();
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& data_dir,
                                           StoreOptions options) {
  std::string doing = "opening the store in " + data_dir.string();
  auto dir = DataDir::open(data_dir);
  if (!dir) return std::move(dir).take_error().with_context(doing);
  std::filesystem::path file = dir->database_file();
  auto db = SqliteDatabase::open(file);
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
  // One connection: SQLite lets one writer in at a time whatever the number.
  auto pool = std::make_unique<ConnectionPool>(
      [file]() -> Result<std::unique_ptr<Database>> {
        auto reopened = SqliteDatabase::open(file);
        if (!reopened) return std::move(reopened).take_error();
        return std::unique_ptr<Database>(std::move(*reopened));
      },
      1, std::move(*db), options.connection_wait);
  std::unique_ptr<Store> store(new Store(std::move(*dir), std::move(pool), options));
  store->bodies_ = std::make_unique<FileBodies>(store->dir_->profiles_dir());
  store->gate_ = std::make_unique<WriteGate>(store->dir_->root());
  return store;
}

Result<std::unique_ptr<Store>> Store::open_postgres(const std::string& url, StoreOptions options) {
  std::string doing = "opening the store in " + describe_postgres_url(url);
  auto db = PostgresDatabase::connect(url);
  if (!db) return std::move(db).take_error().with_context(doing);
  if (auto migrated = migrate(**db); !migrated) {
    return std::move(migrated).take_error().with_context(doing);
  }
  auto pool = std::make_unique<ConnectionPool>(
      [url]() -> Result<std::unique_ptr<Database>> {
        auto connected = PostgresDatabase::connect(url);
        if (!connected) return std::move(connected).take_error();
        return std::unique_ptr<Database>(std::move(*connected));
      },
      options.connections, std::move(*db), options.connection_wait);
  std::unique_ptr<Store> store(new Store(std::nullopt, std::move(pool), options));
  store->bodies_ = std::make_unique<TableBodies>(*store->pool_);
  store->postgres_url_ = url;
  return store;
}

Store::Store(std::optional<DataDir> dir, std::unique_ptr<ConnectionPool> pool, StoreOptions options)
    : dir_(std::move(dir)),
      pool_(std::move(pool)),
      clock_(std::move(options.clock)),
      max_profile_bytes_(options.max_profile_bytes),
      min_free_bytes_(options.min_free_bytes),
      rollup_retention_(options.rollup_retention),
      rollup_max_stacks_(options.rollup_max_stacks),
      max_saved_filters_per_service_(options.max_saved_filters_per_service),
      max_saved_filters_(options.max_saved_filters),
      max_snapshots_(options.max_snapshots) {}

template <typename Operation>
auto Store::with_connection(Operation operation) -> decltype(operation(std::declval<Database&>())) {
  constexpr int kAttempts = 8;
  for (int attempt = 1;; ++attempt) {
    {
      auto db = pool_->lease();
      if (!db) return std::move(db).take_error();
      auto result = operation(**db);
      if (result || result.error().kind() != ErrorKind::kConflict || attempt == kAttempts) {
        return result;
      }
    }
    // Apart, so that the transactions that collided do not collide again.
    thread_local std::minstd_rand random(std::random_device{}());
    std::uniform_int_distribution<int> pause_us(0, 1000 << std::min(attempt, 5));
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us(random)));
  }
}

Result<void> Store::check_writable(uint64_t bytes) {
  if (!gate_) return ok();
  return gate_->check(bytes);
}

template <typename T>
Result<T> Store::settle(Result<T> result, bool wrote) {
  if (!gate_) return result;
  if (!result) return gate_->failed(std::move(result).take_error());
  if (wrote) gate_->succeeded();
  return result;
}

Result<HeartbeatAnswer> Store::record_heartbeat(const HostHeartbeat& heartbeat,
                                                const FollowSubscriptions& follow) {
  if (heartbeat.hostname.empty() || heartbeat.service_name.empty()) {
    return Error::invalid_argument("a heartbeat needs a hostname and a service name");
  }
  if (heartbeat.ip_address.empty()) return Error::invalid_argument("ip_address is empty");
  if (!heartbeat.extra.is_object()) {
    return Error::invalid_argument("the heartbeat's extra fields must be a JSON object");
  }
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto record = [&](Database& db) -> Result<HeartbeatAnswer> {
    TimePoint now = current_time();
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    if (auto locked = lock_host(db, heartbeat.hostname, heartbeat.service_name); !locked) {
      return std::move(locked).take_error();
    }
    if (auto upserted = upsert_host(db, heartbeat, now); !upserted) {
      return std::move(upserted).take_error();
    }
    HeartbeatAnswer answer;
    if (heartbeat.containers_digest) {
      auto kept = inventory_has_digest(db, heartbeat.hostname, heartbeat.service_name,
                                       *heartbeat.containers_digest);
      if (!kept) return std::move(kept).take_error();
      if (*kept) answer.containers_digest = heartbeat.containers_digest;
    } else {
      auto synced =
          sync_inventory(db, heartbeat.hostname, heartbeat.service_name, heartbeat.containers);
      if (!synced) return std::move(synced).take_error();
      answer.containers_digest = std::move(*synced);
    }
    auto current = find_current_command(db, heartbeat.hostname, heartbeat.service_name);
    if (!current) return std::move(current).take_error();
    if (follow) {
      auto followed = follow_subscriptions(db, heartbeat, now, selectors_, follow, *current);
      if (!followed) return std::move(followed).take_error();
      if (*followed) current = find_current_command(db, heartbeat.hostname, heartbeat.service_name);
      if (!current) return std::move(current).take_error();
    }
    if (auto delivered = deliver(db, std::move(*current), now, answer); !delivered) {
      return std::move(delivered).take_error();
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return answer;
  };
  return settle(in_context(with_connection(record),
                           "recording a heartbeat from " +
                               host_and_service(heartbeat.hostname, heartbeat.service_name)));
}

Result<HeartbeatAnswer> Store::deliver_current(const std::string& hostname,
                                               const std::string& service) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto answer_again = [&](Database& db) -> Result<HeartbeatAnswer> {
    TimePoint now = current_time();
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    if (auto locked = lock_host(db, hostname, service); !locked) {
      return std::move(locked).take_error();
    }
    HeartbeatAnswer answer;
    auto current = find_current_command(db, hostname, service);
    if (!current) return std::move(current).take_error();
    if (auto delivered = deliver(db, std::move(*current), now, answer); !delivered) {
      return std::move(delivered).take_error();
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return answer;
  };
  auto answer = in_context(with_connection(answer_again), "answering the held heartbeat of " +
                                                              host_and_service(hostname, service));
  bool wrote = answer && answer->first_delivery;
  return settle(std::move(answer), wrote);
}

Result<SubmitOutcome> Store::submit(ProfilingRequestRecord request, bool dry_run,
                                    const PlanHost& plan, const RequestWrites& writes) {
  std::string context =
      "submitting " + std::string(to_string(request.type)) + " request " + request.request_id;
  return settle(in_context(submit_in_batches(std::move(request), dry_run, plan, writes), context),
                !dry_run);
}

Result<SubmitOutcome> Store::submit_in_batches(ProfilingRequestRecord request, bool dry_run,
                                               const PlanHost& plan, const RequestWrites& writes) {
  const TargetHosts& targets = request.target_hosts;
  // A dry run writes nothing: it is answered whatever the state of the disk.
  if (!dry_run) {
    uint64_t args_bytes = request.additional_args ? request.additional_args->dump().size() : 0;
    if (auto writable = check_writable(targets.size() * kBytesPerTargetHost + args_bytes);
        !writable) {
      return std::move(writable).take_error();
    }
  }
  request.created_at = current_time();
  SubmitOutcome outcome{request.request_id, dry_run, {}};
  bool issued_commands = false;
  auto batch_begin = targets.begin();  // sorted: see lock_host
  do {
    auto batch_end = batch_begin;
    std::advance(batch_end,
                 std::min<size_t>(kHostsPerTransaction, std::distance(batch_begin, targets.end())));
    const bool first = batch_begin == targets.begin();
    const bool last = batch_end == targets.end();
    auto write_batch = [&](Database& db) -> Result<std::vector<PlannedHost>> {
      TimePoint now = current_time();
      // A dry run reads in a transaction too, for a consistent view of each batch, and never
      // commits.
      auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
      if (!transaction) return std::move(transaction).take_error();
      // A dry run changes no host: it takes no lock. The current commands are read in one query
      // for the batch, not one per host (a round trip each on PostgreSQL).
      std::vector<std::string> hostnames;
      for (auto target = batch_begin; target != batch_end; ++target) {
        if (!dry_run) {
          if (auto locked = lock_host(db, target->first, request.service_name); !locked) {
            return std::move(locked).take_error();
          }
        }
        hostnames.push_back(target->first);
      }
      auto currents = find_current_commands(db, request.service_name, hostnames);
      if (!currents) return std::move(currents).take_error();
      auto known = find_known_hosts(db, request.service_name, hostnames);
      if (!known) return std::move(known).take_error();
      std::vector<PlannedHost> planned;
      for (auto target = batch_begin; target != batch_end; ++target) {
        const auto& [hostname, pids] = *target;
        std::optional<CommandRow> current;
        if (auto found = currents->find(hostname); found != currents->end()) {
          current = std::move(found->second);
        }
        planned.push_back(plan(hostname, pids, current, now));
        planned.back().plan.heard_from = known->contains(hostname);
      }
      if (dry_run) return planned;
      bool issues = std::any_of(planned.begin(), planned.end(),
                                [](const PlannedHost& host) { return host.row.has_value(); });
      // A request that changes nothing anywhere is done as soon as it is made.
      bool done = last && !issued_commands && !issues;
      ArgsWriter args;
      if (first) {
        request.status = done ? RequestStatus::kCompleted : RequestStatus::kPending;
        if (auto inserted = insert_request(db, request, args); !inserted) {
          return std::move(inserted).take_error();
        }
        if (auto written = write_with_request(db, request, writes, now); !written) {
          return std::move(written).take_error();
        }
      } else if (done) {
        if (auto set = set_request_status(db, request.request_id, RequestStatus::kCompleted);
            !set) {
          return std::move(set).take_error();
        }
      }
      for (const PlannedHost& host : planned) {
        if (auto written = write_host(db, host, now, args); !written) {
          return std::move(written).take_error().with_context(
              host_and_service(host.plan.hostname, request.service_name));
        }
        if (!host.row) continue;
        if (auto notified = notify_command(db, host.plan.hostname, request.service_name);
            !notified) {
          return std::move(notified).take_error();
        }
      }
      if (auto committed = transaction->commit(); !committed) {
        return std::move(committed).take_error();
      }
      return planned;
    };
    auto planned = with_connection(write_batch);
    if (!planned) {
      if (first || dry_run) return std::move(planned).take_error();
      // In its own words when it is the gate's: the hosts done are counted in the log.
      spdlog::warn("request {}: {} of its {} hosts were given their commands before: {}",
                   request.request_id, outcome.hosts.size(), targets.size(),
                   planned.error().message());
      return std::move(planned).take_error().with_context(
          std::to_string(outcome.hosts.size()) + " of the request's " +
          std::to_string(targets.size()) + " hosts, up to " + outcome.hosts.back().hostname +
          ", were given their commands; the others were not");
    }
    for (PlannedHost& host : *planned) {
      if (host.row) {
        issued_commands = true;
        if (!dry_run && commands_changed_) {
          commands_changed_(host.plan.hostname, request.service_name);
        }
      }
      outcome.hosts.push_back(std::move(host.plan));
    }
    batch_begin = batch_end;
  } while (batch_begin != targets.end());
  return outcome;
}

Result<CompletionOutcome> Store::record_completion(const CompletionReport& report) {
  if (report.status != CommandStatus::kCompleted && report.status != CommandStatus::kFailed) {
    return Error::invalid_argument("a completion's status is completed or failed, not " +
                                   std::string(to_string(report.status)));
  }
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto record = [&](Database& db) -> Result<CompletionOutcome> {
    TimePoint now = current_time();
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto found = find_command(db, report.command_id);
    if (!found) return std::move(found).take_error();
    if (!*found) return CompletionOutcome{false, "Command " + report.command_id + " is unknown"};
    if (db.dialect() != Dialect::kSqlite) {
      // Read again under the host's lock: another replica may have recorded a report meanwhile.
      const Command& unlocked = (*found)->command;
      if (auto locked = lock_host(db, unlocked.hostname, unlocked.service_name); !locked) {
        return std::move(locked).take_error();
      }
      found = find_command(db, report.command_id);
      if (!found) return std::move(found).take_error();
      if (!*found) {
        return CompletionOutcome{false, "Command " + report.command_id + " is unknown"};
      }
    }
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
      if (auto marked = mark_session_failed(db, report, now); !marked) {
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
    if (auto marked = mark_reported(db, report, now); !marked) {
      return std::move(marked).take_error();
    }
    RequestStatus outcome = report.status == CommandStatus::kCompleted ? RequestStatus::kCompleted
                                                                       : RequestStatus::kFailed;
    if (auto advanced = advance_requests(db, report.command_id, outcome); !advanced) {
      return std::move(advanced).take_error();
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return CompletionOutcome{true, "Command completion recorded for " + report.command_id};
  };
  auto outcome = in_context(with_connection(record),
                            "recording the completion of command " + report.command_id);
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
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  std::string context =
      "storing a profile from " + host_and_service(upload.hostname, upload.service_name);
  // Compressing (and fsyncing a file) takes long: before the lease, so heartbeats do not wait.
  auto body = bodies_->prepare(upload.collapsed);
  if (!body) return settle(in_context(Result<int64_t>(std::move(body).take_error()), context));

  ProfileRow row;
  row.profile.service_name = upload.service_name;
  row.profile.hostname = upload.hostname;
  row.profile.start_time = upload.start_time;
  row.profile.end_time = upload.end_time;
  row.profile.raw_size = static_cast<int64_t>(upload.collapsed.size());
  row.profile.compressed_size = body->compressed_size;
  row.file_name = body->file_name;
  row.cpu_avg = upload.cpu_avg;
  row.mem_avg = upload.mem_avg;
  row.instance_type = upload.instance_type;
  row.processors = upload.processors;
  row.profile.samples = upload.samples;
  row.profile.idle_samples = upload.idle_samples;
  row.profile.cpu_seconds = upload.cpu_seconds;
  int64_t day_ms = bucket_start(to_unix_ms(upload.start_time), Resolution::kDay);
  auto new_texts = known_texts_.unknown(upload.service_name, day_ms, upload.rollup.texts);
  auto insert = [&](Database& db) -> Result<int64_t> {
    row.profile.received_at = current_time();
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto gpid = insert_profile(db, row);
    if (!gpid) return gpid;
    if (auto attached = bodies_->attach(db, *gpid, *body); !attached) {
      return std::move(attached).take_error();
    }
    if (upload.processors > 0) {
      auto noted =
          note_host_processors(db, upload.hostname, upload.service_name, upload.processors);
      if (!noted) return std::move(noted).take_error();
    }
    if (auto rolled = roll_up_profile(db, upload.service_name, upload.start_time, upload.end_time,
                                      upload.rollup, new_texts, rollup_max_stacks_);
        !rolled) {
      return std::move(rolled).take_error();
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return gpid;
  };
  auto gpid = with_connection(insert);
  if (gpid) {
    known_texts_.learn(upload.service_name, day_ms, new_texts);
  } else {
    bodies_->abandon(*body);
  }
  return settle(in_context(std::move(gpid), context));
}

Result<RollupView> Store::read_rollup(const RollupQuery& query) {
  std::string doing = "reading the rollups of " + query.service;
  auto read = [&](Database& db) -> Result<RollupView> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto plan = plan_of(db, query.service, query.from, query.to);
    if (!plan) return std::move(plan).take_error();
    return storage::read_rollup(db, query, *plan);
  };
  auto view = with_connection(read);
  if (!view) return std::move(view).take_error().with_context(doing);
  std::vector<StackId> ids;
  ids.reserve(view->stacks.size());
  for (const StackCount& stack : view->stacks) {
    if (stack.id != kStacksPastCap) ids.push_back(stack.id);
  }
  auto texts = stack_texts(query.service, ids);
  if (!texts) return std::move(texts).take_error().with_context(doing);
  view->texts = std::move(*texts);
  return view;
}

Result<BucketPlan> Store::plan_of(Database& db, const std::string& service, TimePoint from,
                                  TimePoint to) const {
  auto compacted = read_compacted(db, service);
  if (!compacted) return std::move(compacted).take_error();
  return plan_buckets(to_unix_ms(from), to_unix_ms(to), to_unix_ms(current_time()),
                      rollup_retention_, *compacted);
}

Result<int64_t> Store::compact_rollups(int64_t most) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto services =
      with_connection([](Database& db) { return services_with_rollups(db, Resolution::kMinute); });
  if (!services) return std::move(services).take_error().with_context("compacting rollups");
  int64_t compacted = 0;
  std::optional<Error> failed;  // the first; the other services are compacted all the same
  for (const std::string& service : *services) {
    while (compacted < most) {
      // One bucket per lease: uploads and heartbeats go on in between.
      auto done = with_connection([&](Database& db) {
        return compact_next_bucket(db, service, to_unix_ms(current_time()), rollup_max_stacks_);
      });
      if (!done) {
        if (!failed) {
          failed =
              std::move(done).take_error().with_context("compacting the rollups of " + service);
        }
        break;
      }
      if (!*done) break;
      ++compacted;
    }
  }
  if (failed) return settle(Result<int64_t>(std::move(*failed)));
  return compacted;
}

Result<std::vector<std::pair<StackId, std::string>>> Store::stack_texts(
    const std::string& service, std::span<const StackId> ids) {
  // A few thousand at a time, each on a connection leased anew: SQLite has one, and a view of a
  // million stacks must not keep heartbeats from it. A text deleted meanwhile (its last day past
  // retention) is missing.
  constexpr size_t kTextsPerLease = 4096;
  std::vector<std::pair<StackId, std::string>> texts;
  texts.reserve(ids.size());
  for (size_t first = 0; first < ids.size(); first += kTextsPerLease) {
    std::span<const StackId> chunk =
        ids.subspan(first, std::min(kTextsPerLease, ids.size() - first));
    size_t before = texts.size();
    auto read = with_connection([&](Database& db) {
      texts.resize(before);  // what a failed try added
      return read_stack_texts(db, service, chunk, [&](StackId id, std::string_view text) {
        texts.emplace_back(id, text);
      });
    });
    if (!read) return std::move(read).take_error();
  }
  std::sort(texts.begin(), texts.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return texts;
}

Result<std::map<LabelKey, int64_t>> Store::label_samples(const std::string& service,
                                                         TimePoint since, TimePoint until) {
  auto read = [&](Database& db) -> Result<std::map<LabelKey, int64_t>> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto plan = plan_of(db, service, since, until);
    if (!plan) return std::move(plan).take_error();
    return read_label_samples(db, service, *plan);
  };
  return in_context(with_connection(read), "reading the labels of " + service);
}

Result<std::optional<std::pair<TimePoint, TimePoint>>> Store::data_span(
    const std::string& service, const std::optional<LabelFilter>& filter, TimePoint since,
    TimePoint until) {
  auto read = [&](Database& db) -> Result<std::optional<std::pair<int64_t, int64_t>>> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto plan = plan_of(db, service, since, until);
    if (!plan) return std::move(plan).take_error();
    return read_data_span(db, service, filter, *plan);
  };
  auto span = with_connection(read);
  if (!span) return std::move(span).take_error().with_context("reading the rollups of " + service);
  if (!*span) return std::optional<std::pair<TimePoint, TimePoint>>();
  return std::optional<std::pair<TimePoint, TimePoint>>(
      std::pair{from_unix_ms((*span)->first), from_unix_ms((*span)->second)});
}

Result<std::vector<RollupSlot>> Store::read_rollup_slots(const RollupQuery& query, int64_t slot_ms,
                                                         const StackClasses* classes) {
  const int64_t now_ms = to_unix_ms(current_time());
  const int64_t from_ms = to_unix_ms(query.from);
  auto kept_at_start = [&](Resolution size) {
    auto kept =
        std::chrono::duration_cast<std::chrono::milliseconds>(rollup_retention_.of(size)).count();
    return kept == 0 || from_ms >= now_ms - kept;
  };
  // The coarsest size whose width divides the slot; where the start is past the retention of
  // every such size, the finest size still kept there, its width the slot's.
  std::optional<Resolution> resolution;
  for (Resolution size : {Resolution::kDay, Resolution::kHour, Resolution::kMinute}) {
    if (slot_ms % width_ms(size) == 0 && kept_at_start(size)) {
      resolution = size;
      break;
    }
  }
  for (Resolution size : kResolutions) {
    if (resolution) break;
    if (kept_at_start(size) || size == Resolution::kDay) {
      resolution = size;
      slot_ms = std::max(slot_ms, width_ms(size));
    }
  }
  auto read = [&](Database& db) -> Result<std::vector<RollupSlot>> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto compacted = read_compacted(db, query.service);
    if (!compacted) return std::move(compacted).take_error();
    return storage::read_rollup_slots(db, query, *resolution, slot_ms, *compacted, classes);
  };
  return with_connection(read);
}

Result<std::vector<HostSlotMetrics>> Store::upload_metrics(const UploadMetricsQuery& query) {
  return in_context(with_connection([&](Database& db) { return read_upload_metrics(db, query); }),
                    "reading the uploads' metrics of " + query.service);
}

Result<std::vector<ServiceHost>> Store::service_hosts(TimePoint since) {
  return in_context(
      with_connection([&](Database& db) { return read_service_hosts(db, to_unix_ms(since)); }),
      "listing the services' hosts");
}

Result<std::vector<ServiceDataSpan>> Store::service_data_spans(TimePoint since) {
  return in_context(
      with_connection([&](Database& db) { return read_service_data_spans(db, to_unix_ms(since)); }),
      "listing the services with profiles");
}

Result<int64_t> Store::save_filter(const SavedFilter& filter) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto save = [&](Database& db) {
    return in_write_transaction(db, [&] {
      return insert_saved_filter(db, filter, to_unix_ms(current_time()),
                                 {max_saved_filters_per_service_, max_saved_filters_});
    });
  };
  return settle(in_context(with_connection(save), "saving a filter of " + filter.service));
}

Result<bool> Store::replace_filter(int64_t id, const std::string& filter) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto replace = [&](Database& db) {
    return in_write_transaction(db, [&] { return update_saved_filter(db, id, filter); });
  };
  return settle(in_context(with_connection(replace), "saving filter " + std::to_string(id)));
}

Result<bool> Store::delete_filter(int64_t id) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto remove = [&](Database& db) {
    return in_write_transaction(db, [&] { return delete_saved_filter(db, id); });
  };
  return settle(in_context(with_connection(remove), "deleting filter " + std::to_string(id)));
}

Result<std::vector<SavedFilter>> Store::saved_filters(const std::string& service) {
  return in_context(with_connection([&](Database& db) { return read_saved_filters(db, service); }),
                    "listing the saved filters of " + service);
}

Result<int64_t> Store::save_snapshot(const Snapshot& snapshot) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto save = [&](Database& db) {
    return in_write_transaction(db, [&] {
      return insert_snapshot(db, snapshot, to_unix_ms(current_time()), max_snapshots_);
    });
  };
  return settle(in_context(with_connection(save), "saving a snapshot of " + snapshot.service));
}

Result<std::optional<Snapshot>> Store::find_snapshot(int64_t id) {
  return in_context(with_connection([&](Database& db) { return storage::find_snapshot(db, id); }),
                    "reading snapshot " + std::to_string(id));
}

Result<std::vector<int64_t>> Store::profiles_not_rolled_up(int64_t limit) {
  return in_context(
      with_connection([&](Database& db) { return storage::profiles_not_rolled_up(db, limit); }),
      "listing the profiles the rollups lack");
}

Result<bool> Store::add_to_rollups(int64_t gpid, const ProfileRollup* rollup,
                                   const std::string& instance_type) {
  if (auto writable = check_writable(); !writable) return std::move(writable).take_error();
  auto add = [&](Database& db) -> Result<bool> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto found = find_profile(db, gpid);
    if (!found) return std::move(found).take_error();
    if (!*found) return false;  // deleted meanwhile
    auto marked = mark_rolled_up(db, gpid, instance_type);
    if (!marked || !*marked) return marked;
    const StoredProfile& stored = (*found)->profile;
    if (rollup != nullptr) {
      if (auto rolled = roll_up_profile(db, stored.service_name, stored.start_time, stored.end_time,
                                        *rollup, rollup->texts, rollup_max_stacks_);
          !rolled) {
        return std::move(rolled).take_error();
      }
    }
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return true;
  };
  return settle(in_context(with_connection(add),
                           "adding profile " + std::to_string(gpid) + " to the rollups"));
}

Result<int64_t> Store::expire_rollups(int64_t batch) {
  int64_t now_ms = to_unix_ms(current_time());
  auto expire = [&](Database& db) {
    return storage::expire_rollups(db, rollup_retention_, now_ms, batch);
  };
  return in_context(with_connection(expire), "deleting old rollups");
}

Result<std::string> Store::read_profile(int64_t gpid) {
  std::string doing = "reading profile " + std::to_string(gpid);
  auto found = with_connection([gpid](Database& db) { return find_profile(db, gpid); });
  if (!found) return std::move(found).take_error().with_context(doing);
  if (!*found) return Error(ErrorKind::kNotFound, "no profile has gpid " + std::to_string(gpid));
  return in_context(bodies_->read(**found), doing);
}

Result<StoredProfile> Store::get_profile(int64_t gpid) {
  auto found = with_connection([gpid](Database& db) { return find_profile(db, gpid); });
  if (!found) {
    return std::move(found).take_error().with_context("reading profile " + std::to_string(gpid));
  }
  if (!*found) return Error(ErrorKind::kNotFound, "no profile has gpid " + std::to_string(gpid));
  return std::move((*found)->profile);
}

Result<std::vector<StoredProfile>> Store::list_profiles(const ProfileFilter& filter) {
  return in_context(with_connection([&](Database& db) { return find_profiles(db, filter); }),
                    "listing profiles");
}

Result<TargetHosts> Store::resolve_targets(const TargetQuery& query) {
  return with_connection([&](Database& db) -> Result<TargetHosts> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    if (db.dialect() == Dialect::kPostgres) {
      // The inventory is rewritten by every heartbeat and stays cached: an index probe costs what
      // a page read in sequence does. At PostgreSQL's default (4) a selector matching a few
      // thousand containers scans every process; at 1.1 it probes their index (75 -> 50 ms for
      // 6,000 of 100,000), and a selector matching them all still scans.
      if (auto set = db.execute("SET LOCAL random_page_cost = 1.1"); !set) {
        return std::move(set).take_error();
      }
    }
    return storage::resolve_targets(db, query, current_time());
  });
}

Result<std::map<std::string, std::vector<std::string>>> Store::perf_events_of(
    const std::string& service) {
  return with_connection(
      [&](Database& db) -> Result<std::map<std::string, std::vector<std::string>>> {
        return find_perf_events(db, service);
      });
}

Result<std::vector<Subscription>> Store::list_subscriptions(int64_t limit, int64_t offset) {
  return with_connection([&](Database& db) -> Result<std::vector<Subscription>> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    return storage::list_subscriptions(db, limit, offset);
  });
}

Result<WorkloadSnapshot> Store::workload_snapshot(const SnapshotQuery& query) {
  return with_connection([&](Database& db) -> Result<WorkloadSnapshot> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    return read_workload_snapshot(db, query, current_time());
  });
}

Result<void> Store::read_processes(WorkloadSnapshot& snapshot,
                                   const std::vector<size_t>& containers) {
  return with_connection([&](Database& db) -> Result<void> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    return read_processes_of_containers(db, snapshot, containers);
  });
}

Result<std::vector<HostRecord>> Store::list_hosts(const HostFilter& filter) {
  auto list = [&](Database& db) -> Result<std::vector<HostRecord>> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kRead);
    if (!transaction) return std::move(transaction).take_error();
    auto hosts = find_hosts(db, filter);
    if (!hosts) return hosts;
    // The current commands of the hosts listed only, however many the others have.
    for (HostRecord& host : *hosts) {
      const HostHeartbeat& beat = host.last_heartbeat;
      auto current = find_current_command(db, beat.hostname, beat.service_name);
      if (!current) return std::move(current).take_error();
      if (*current) host.current_command = std::move((*current)->command);
    }
    return hosts;
  };
  return in_context(with_connection(list), "listing hosts");
}

Result<std::vector<Command>> Store::list_commands(const CommandFilter& filter) {
  return in_context(with_connection([&](Database& db) { return find_commands(db, filter); }),
                    "listing commands");
}

Result<Command> Store::get_command(const std::string& command_id) {
  auto found = with_connection([&](Database& db) { return find_command(db, command_id); });
  if (!found) return std::move(found).take_error().with_context("reading command " + command_id);
  if (!*found) return Error(ErrorKind::kNotFound, "no command has id " + command_id);
  return std::move((*found)->command);
}

Result<ProfilingRequestRecord> Store::get_request(const std::string& request_id) {
  auto found = with_connection([&](Database& db) { return find_request(db, request_id); });
  if (!found) return std::move(found).take_error().with_context("reading request " + request_id);
  if (!*found) return Error(ErrorKind::kNotFound, "no profiling request has id " + request_id);
  return std::move(**found);
}

Result<nlohmann::json> Store::get_args(const std::string& digest) {
  auto found = with_connection([&](Database& db) { return read_args(db, digest); });
  if (!found) return std::move(found).take_error().with_context("reading arguments " + digest);
  if (!*found) return Error(ErrorKind::kNotFound, "no arguments are stored under " + digest);
  return std::move(**found);
}

void Store::on_commands(CommandsChanged changed, std::function<void()> missed) {
  listener_.reset();
  if (postgres_url_.empty() || !changed) {
    commands_changed_ = std::move(changed);
    return;
  }
  listener_ = std::make_unique<PostgresListener>(
      postgres_url_,
      [changed = std::move(changed), missed](const std::string& payload) {
        auto split = payload.find('\n');
        if (split == std::string::npos) return missed();  // too long to name: wake everyone
        changed(payload.substr(0, split), payload.substr(split + 1));
      },
      missed);
}

Result<ExpiredRows> Store::expire_before(TimePoint cutoff, int64_t batch) {
  // Each kind in a transaction of its own: short ones, between which heartbeats get through.
  auto in_transaction = [](auto remove) {
    return [remove](Database& db) { return in_write_transaction(db, [&] { return remove(db); }); };
  };
  ExpiredRows expired;
  auto profiles = with_connection(
      in_transaction([&](Database& db) { return delete_profiles_before(db, cutoff, batch); }));
  if (!profiles) return std::move(profiles).take_error().with_context("deleting old profiles");
  bodies_->forget(profiles->file_names);
  expired.profiles = profiles->count;
  auto commands = with_connection(
      in_transaction([&](Database& db) { return delete_history_before(db, cutoff, batch); }));
  if (!commands) return std::move(commands).take_error().with_context("deleting old commands");
  expired.commands = *commands;
  auto requests = with_connection(
      in_transaction([&](Database& db) { return delete_requests_before(db, cutoff, batch); }));
  if (!requests) return std::move(requests).take_error().with_context("deleting old requests");
  expired.requests = *requests;
  auto args = with_connection(
      in_transaction([&](Database& db) { return delete_unreferenced_args(db, batch); }));
  if (!args) return std::move(args).take_error().with_context("deleting unused additional_args");
  expired.args = *args;
  return expired;
}

Result<int64_t> Store::expire_hosts_before(TimePoint cutoff, int64_t batch) {
  auto remove = [&](Database& db) -> Result<int64_t> {
    auto transaction = Transaction::begin(db, Transaction::Kind::kWrite);
    if (!transaction) return std::move(transaction).take_error();
    auto removed = delete_hosts_before(db, cutoff, batch);
    if (!removed) return removed;
    if (auto committed = transaction->commit(); !committed) {
      return std::move(committed).take_error();
    }
    return removed;
  };
  return in_context(with_connection(remove), "deleting hosts not heard from");
}

Result<std::optional<std::string>> Store::profile_room(int64_t incoming_bytes) {
  auto in_mib = [](uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
  if (dir_ && min_free_bytes_ > 0) {
    auto free_bytes = free_bytes_at(dir_->root());
    if (free_bytes && *free_bytes < min_free_bytes_ + static_cast<uint64_t>(incoming_bytes)) {
      return std::optional<std::string>(
          "the server takes no more profiles for now: " + in_mib(*free_bytes) + " free in " +
          dir_->root().string() + ", and it keeps " + in_mib(min_free_bytes_) +
          " for heartbeats, commands and completions (--min-free-disk-mb)");
    }
  }
  if (max_profile_bytes_ <= 0) return std::optional<std::string>();
  auto used = with_connection([](Database& db) { return stored_profile_bytes(db); });
  if (!used) return std::move(used).take_error().with_context("summing the profiles' sizes");
  if (*used + incoming_bytes > max_profile_bytes_) {
    return std::optional<std::string>("the server takes no more profiles for now: they take " +
                                      in_mib(static_cast<uint64_t>(*used)) + " of the " +
                                      in_mib(static_cast<uint64_t>(max_profile_bytes_)) +
                                      " they may (--max-storage-mb) until older ones expire");
  }
  return std::optional<std::string>();
}

}  // namespace dormant::server::storage
