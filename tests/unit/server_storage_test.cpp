#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store_test_fixture.h"
#include "tests/support/eventually.h"
#include "tests/support/postgres_cluster.h"

#include "common/atomic_file.h"
#include "common/uuid.h"
#include "server/control/retention.h"
#include "server/storage/database.h"
#include "server/storage/migrations.h"
#include "server/storage/postgres_database.h"
#include "server/storage/profile_files.h"
#include "server/storage/sqlite_database.h"
#include "server/storage/store.h"

namespace dormant::server::storage {
namespace {

// ---------------------------------------------------------------------------------------------
// Database and migrations

using DatabaseTest = StorageDirTest;

TEST_F(DatabaseTest, OpensInWalModeWithForeignKeys) {
  auto db = SqliteDatabase::open(dir_ / "x.db");
  ASSERT_TRUE(db.ok()) << db.error().message();
  auto journal = (*db)->prepare("PRAGMA journal_mode");
  ASSERT_TRUE(journal.ok());
  ASSERT_TRUE(journal->step().value());
  EXPECT_EQ(journal->text(0), "wal");
  auto keys = (*db)->prepare("PRAGMA foreign_keys");
  ASSERT_TRUE(keys.ok());
  ASSERT_TRUE(keys->step().value());
  EXPECT_EQ(keys->int64(0), 1);
}

TEST_F(DatabaseTest, ErrorsSayWhichStatementAndWhatSqliteSaid) {
  auto db = SqliteDatabase::open(dir_ / "x.db");
  ASSERT_TRUE(db.ok());
  auto bad = (*db)->prepare("SELEC 1");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("preparing \"SELEC 1\""), std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("syntax error"), std::string::npos);

  ASSERT_TRUE((*db)->execute("CREATE TABLE t (k TEXT PRIMARY KEY)").ok());
  auto insert = (*db)->prepare("INSERT INTO t (k) VALUES (?1)");
  ASSERT_TRUE(insert.ok());
  ASSERT_TRUE(insert->bind_all("a").run().ok());
  auto duplicate = insert->bind_all("a").run();
  ASSERT_FALSE(duplicate.ok());
  EXPECT_EQ(duplicate.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(duplicate.error().message().find("UNIQUE constraint failed: t.k"), std::string::npos)
      << duplicate.error().message();

  auto out_of_range = insert->bind(5, int64_t{1}).run();
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.error().message().find("binding parameter 5"), std::string::npos);
}

TEST_F(DatabaseTest, TransactionRollsBackUnlessCommitted) {
  auto db = SqliteDatabase::open(dir_ / "x.db");
  ASSERT_TRUE(db.ok());
  Database& database = **db;
  ASSERT_TRUE(database.execute("CREATE TABLE t (v INTEGER)").ok());
  {
    auto transaction = Transaction::begin(database, Transaction::Kind::kWrite);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(database.execute("INSERT INTO t VALUES (1)").ok());
  }
  {
    auto transaction = Transaction::begin(database, Transaction::Kind::kWrite);
    ASSERT_TRUE(transaction.ok());
    ASSERT_TRUE(database.execute("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(transaction->commit().ok());
  }
  EXPECT_FALSE(database.in_transaction());
  auto sum = database.prepare("SELECT group_concat(v) FROM t");
  ASSERT_TRUE(sum->step().value());
  EXPECT_EQ(sum->text(0), "2");
}

TEST_F(DatabaseTest, MigrationsApplyInOrderOnceEach) {
  constexpr Migration kFirst{1, "first", "CREATE TABLE a (x INTEGER)"};
  constexpr Migration kSecond{2, "second", "ALTER TABLE a ADD COLUMN y TEXT"};
  const std::vector<Migration> v1 = {kFirst};
  const std::vector<Migration> v2 = {kFirst, kSecond};
  {
    auto db = SqliteDatabase::open(dir_ / "m.db");
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(schema_version(**db).value(), 0);
    EXPECT_EQ(migrate(**db, v1).value(), 1);
    EXPECT_EQ(migrate(**db, v1).value(), 1);  // nothing left to do
  }
  auto db = SqliteDatabase::open(dir_ / "m.db");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(schema_version(**db).value(), 1);
  auto migrated = migrate(**db, v2);
  ASSERT_TRUE(migrated.ok()) << migrated.error().message();
  EXPECT_EQ(*migrated, 2);
  EXPECT_TRUE((*db)->execute("INSERT INTO a (x, y) VALUES (1, 'one')").ok());
}

TEST_F(DatabaseTest, AFailedMigrationLeavesTheVersionAlone) {
  const std::vector<Migration> broken = {
      {1, "good", "CREATE TABLE a (x INTEGER)"},
      {2, "bad", "CREATE TABLE b (x INTEGER); CREATE TABLE a (x INTEGER)"}};
  auto db = SqliteDatabase::open(dir_ / "m.db");
  ASSERT_TRUE(db.ok());
  auto migrated = migrate(**db, broken);
  ASSERT_FALSE(migrated.ok());
  EXPECT_NE(migrated.error().message().find("migration 2 (bad)"), std::string::npos)
      << migrated.error().message();
  EXPECT_EQ(schema_version(**db).value(), 1);
  EXPECT_FALSE((*db)->execute("SELECT * FROM b").ok());  // rolled back with it
}

TEST_F(DatabaseTest, FreshStoreGetsTheWholeSchemaAndKeepsItOnReopen) {
  {
    auto store = Store::open(dir_ / "data");
    ASSERT_TRUE(store.ok()) << store.error().message();
  }
  auto store = Store::open(dir_ / "data");
  ASSERT_TRUE(store.ok()) << store.error().message();
  store->reset();
  auto db = SqliteDatabase::open(dir_ / "data" / "dormant.db");
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(schema_version(**db).value(), static_cast<int>(sqlite_migrations().size()));
  for (const char* table :
       {"hosts", "profiling_requests", "commands", "command_requests", "executions", "profiles"}) {
    EXPECT_TRUE((*db)->execute(std::string("SELECT * FROM ") + table).ok()) << table;
  }
}

TEST_F(DatabaseTest, ADatabaseFromANewerBinaryIsRefused) {
  ASSERT_TRUE(Store::open(dir_ / "data").ok());
  {
    auto db = SqliteDatabase::open(dir_ / "data" / "dormant.db");
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->execute("PRAGMA user_version = 99").ok());
  }
  auto store = Store::open(dir_ / "data");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.error().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(store.error().message().find("schema version 99, newer"), std::string::npos)
      << store.error().message();
}

TEST_F(DatabaseTest, OneStorePerDataDirectory) {
  auto first = Store::open(dir_ / "data");
  ASSERT_TRUE(first.ok());
  auto second = Store::open(dir_ / "data");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message().find("in use by another dormant-server"), std::string::npos);
  first->reset();
  EXPECT_TRUE(Store::open(dir_ / "data").ok());
}

// ---------------------------------------------------------------------------------------------
// The store

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values(Dialect::kSqlite, Dialect::kPostgres),
                         store_name);

TEST_P(StoreTest, HeartbeatUpsertsTheHostAndKeepsExtraFields) {
  HostHeartbeat first = heartbeat("web-01");
  first.agent_version = "1.53.1";
  first.agent_timestamp = "2026-08-05T10:00:00.123456";
  first.extra = {{"namespace", "prod"}, {"containers", json::array({{{"container_name", "c"}}})}};
  first.agent_health = json{{"profilers", {{"perf", "ok"}}}};
  first.perf_supported_events = {"cycles", "instructions"};
  ASSERT_TRUE(commands_->record_heartbeat(first).ok());

  now_ += seconds(30);
  HostHeartbeat second = first;
  second.ip_address = "10.0.0.8";
  second.received_command_ids = {"a", "b"};
  second.executed_command_ids = {"a"};
  second.last_command_id = "b";
  second.agent_timestamp = "2026-08-05T10:00:30.000001";
  ASSERT_TRUE(commands_->record_heartbeat(second).ok());
  ASSERT_TRUE(commands_->record_heartbeat(heartbeat("web-01", "batch")).ok());

  auto hosts = store_->list_hosts({std::nullopt, "web", 1000, {}});
  ASSERT_TRUE(hosts.ok()) << hosts.error().message();
  ASSERT_EQ(hosts->size(), 1u);
  const HostRecord& host = hosts->front();
  EXPECT_EQ(host.last_heartbeat.ip_address, "10.0.0.8");
  EXPECT_EQ(host.last_heartbeat.agent_version, "1.53.1");
  EXPECT_EQ(host.last_heartbeat.agent_timestamp, "2026-08-05T10:00:30.000001");
  EXPECT_EQ(host.last_heartbeat.received_command_ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(host.last_heartbeat.executed_command_ids, std::vector<std::string>{"a"});
  EXPECT_EQ(host.last_heartbeat.last_command_id, "b");
  EXPECT_EQ(host.last_heartbeat.perf_supported_events,
            (std::vector<std::string>{"cycles", "instructions"}));
  EXPECT_EQ(host.last_heartbeat.extra, first.extra);
  EXPECT_EQ(host.last_heartbeat.agent_health, first.agent_health);
  EXPECT_EQ(host.first_heartbeat_at, now_ - seconds(30));
  EXPECT_EQ(host.last_heartbeat_at, now_);
  EXPECT_FALSE(host.current_command);
  EXPECT_EQ(store_->list_hosts().value().size(), 2u);
}

TEST_P(StoreTest, HeartbeatReturnsTheSameCommandUntilReplacedAndMarksItSentOnce) {
  EXPECT_FALSE(beat("web-01"));
  SubmitOutcome outcome = submit(start({{"web-01", std::nullopt}}));
  ASSERT_EQ(outcome.hosts.size(), 1u);
  ASSERT_TRUE(outcome.hosts[0].command);
  const std::string id = outcome.hosts[0].command->command_id;
  EXPECT_EQ(outcome.hosts[0].command->status, CommandStatus::kPending);
  EXPECT_EQ(store_->get_request(outcome.request_id)->status, RequestStatus::kPending);

  TimePoint delivered = now_ += seconds(1);
  auto first = beat("web-01");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->command_id, id);
  EXPECT_EQ(first->status, CommandStatus::kSent);
  EXPECT_EQ(first->sent_at, delivered);
  EXPECT_EQ(store_->get_request(outcome.request_id)->status, RequestStatus::kAssigned);

  auto executions = [this] { return column("SELECT status FROM executions"); };
  EXPECT_EQ(executions(), "assigned");

  for (int i = 0; i < 3; ++i) {
    now_ += seconds(30);
    auto again = beat("web-01");
    ASSERT_TRUE(again);
    EXPECT_EQ(again->command_id, id);
    EXPECT_EQ(again->sent_at, delivered);
  }
  EXPECT_EQ(executions(), "assigned");  // one delivery, however many heartbeats
  ASSERT_TRUE(complete(id, "web-01").accepted);
  EXPECT_EQ(executions(), "completed");
  EXPECT_EQ(beat("web-01")->command_id, id);  // completed, and still the current command
  EXPECT_EQ(beat("web-01")->status, CommandStatus::kCompleted);

  SubmitOutcome stopped = submit(stop({{"web-01", std::nullopt}}, StopLevel::kHost));
  EXPECT_EQ(beat("web-01")->command_id, stopped.hosts[0].command->command_id);
  EXPECT_FALSE(beat("web-02"));
}

TEST_P(StoreTest, StartsForOneHostMergeIntoANewCommand) {
  StartRequest first = start({{"web-01", PidList{30, 10}}});
  first.duration_s = 120;
  first.frequency_hz = 11;
  first.continuous = true;
  first.additional_args = {{"max_processes", 5}, {"enable_perfspect", true}};
  SubmitOutcome one = submit(first);

  StartRequest second = start({{"web-01", PidList{20, 10}}});
  second.duration_s = 60;
  second.frequency_hz = 99;
  second.continuous = false;
  second.mode = ProfilingMode::kAllocation;
  second.additional_args = {{"max_processes", 8}};
  SubmitOutcome two = submit(second);

  ASSERT_EQ(two.hosts.size(), 1u);
  EXPECT_EQ(two.hosts[0].action, PlanAction::kMerged);
  const Command& merged = *two.hosts[0].command;
  EXPECT_NE(merged.command_id, one.hosts[0].command->command_id);
  EXPECT_EQ(two.hosts[0].replaces, one.hosts[0].command->command_id);
  EXPECT_EQ(config_of(two.hosts[0]), json({{"command_type", "start"},
                                           {"continuous", true},
                                           {"duration", 120},
                                           {"frequency", 99},
                                           {"profiling_mode", "allocation"},
                                           {"pids", {10, 20, 30}},
                                           {"max_processes", 8},
                                           {"enable_perfspect", true}}));
  EXPECT_EQ(merged.request_ids.size(), 2u);

  // History: the first is replaced by the merged one, which is current.
  auto history = store_->list_commands({"web-01", "web", true, 10, {}});
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].command_id, merged.command_id);
  EXPECT_TRUE((*history)[0].is_current());
  EXPECT_EQ((*history)[1].replaced_by, merged.command_id);
  EXPECT_EQ((*history)[1].replaced_at, now_);
}

TEST_P(StoreTest, AWholeHostStartAbsorbsPidLists) {
  submit(start({{"web-01", PidList{1, 2}}, {"web-02", std::nullopt}}));
  SubmitOutcome outcome = submit(start({{"web-01", std::nullopt}, {"web-02", PidList{3}}}));
  ASSERT_EQ(outcome.hosts.size(), 2u);
  for (const HostPlan& host : outcome.hosts) {
    EXPECT_EQ(host.action, PlanAction::kMerged) << host.hostname;
    EXPECT_FALSE(config_of(host).contains("pids")) << host.hostname;
  }
}

TEST_P(StoreTest, AHeldHeartbeatsAnswerDeliversTheCommandWithoutRecordingTheHeartbeatAgain) {
  HostHeartbeat held = heartbeat("web-01");
  held.containers = {{std::nullopt,
                      "app",
                      std::nullopt,
                      std::nullopt,
                      std::nullopt,
                      std::nullopt,
                      std::nullopt,
                      {{41, "java"}}}};
  TimePoint arrived = now_;
  ASSERT_TRUE(commands_->record_heartbeat(held).ok());
  auto nothing = store_->deliver_current("web-01", "web");
  ASSERT_TRUE(nothing.ok()) << nothing.error().message();
  EXPECT_FALSE(nothing->command);

  now_ += seconds(20);
  SubmitOutcome outcome = submit(start({{"web-01", std::nullopt}}));
  now_ += seconds(1);
  auto woken = store_->deliver_current("web-01", "web");
  ASSERT_TRUE(woken.ok()) << woken.error().message();
  ASSERT_TRUE(woken->command);
  EXPECT_EQ(woken->command->command_id, outcome.hosts[0].command->command_id);
  EXPECT_TRUE(woken->first_delivery);
  EXPECT_EQ(woken->command->sent_at, now_);
  EXPECT_EQ(store_->get_request(outcome.request_id)->status, RequestStatus::kAssigned);
  EXPECT_EQ(column("SELECT status FROM executions"), "assigned");
  auto again = store_->deliver_current("web-01", "web");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->first_delivery);

  // The host as the heartbeat left it: its time, and its inventory.
  auto hosts = store_->list_hosts();
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ((*hosts)[0].last_heartbeat_at, arrived);
  EXPECT_EQ(column("SELECT pid FROM host_processes"), "41");
}

TEST_P(StoreTest, ADeliveredContinuousStartStillMerges) {
  StartRequest continuous = start({{"web-01", PidList{1}}});
  continuous.continuous = true;
  submit(continuous);
  auto delivered = beat("web-01");
  ASSERT_TRUE(complete(delivered->command_id, "web-01").accepted);
  now_ += std::chrono::hours(5);
  SubmitOutcome outcome = submit(start({{"web-01", PidList{2}}}));
  EXPECT_EQ(outcome.hosts[0].action, PlanAction::kMerged);
  EXPECT_EQ(config_of(outcome.hosts[0])["pids"], json({1, 2}));
  EXPECT_EQ(config_of(outcome.hosts[0])["continuous"], true);
}

TEST_P(StoreTest, AFinishedOrFailedStartIsReplacedNotMerged) {
  StartRequest one_shot = start({{"web-01", PidList{1}}, {"web-02", PidList{1}}});
  one_shot.duration_s = 60;
  submit(one_shot);
  std::string on_01 = beat("web-01")->command_id;
  std::string on_02 = beat("web-02")->command_id;
  ASSERT_TRUE(complete(on_01, "web-01").accepted);
  ASSERT_TRUE(complete(on_02, "web-02", CommandStatus::kFailed).accepted);
  now_ += seconds(61);  // the one-shot on web-01 has run its course

  SubmitOutcome outcome = submit(start({{"web-01", PidList{2}}, {"web-02", PidList{2}}}));
  for (const HostPlan& host : outcome.hosts) {
    EXPECT_EQ(host.action, PlanAction::kReplaced) << host.hostname;
    EXPECT_EQ(config_of(host)["pids"], json({2})) << host.hostname;
    EXPECT_EQ(host.command->request_ids, std::vector<std::string>{outcome.request_id});
  }
}

TEST_P(StoreTest, AProcessStopLeavesAStartForTheRemainingPids) {
  SubmitOutcome started = submit(start({{"web-01", PidList{1, 2, 3}}}));
  beat("web-01");
  SubmitOutcome stopped = submit(stop({{"web-01", PidList{2, 9}}}, StopLevel::kProcess));
  ASSERT_EQ(stopped.hosts.size(), 1u);
  EXPECT_EQ(stopped.hosts[0].action, PlanAction::kReducedStart);
  const Command& reduced = *stopped.hosts[0].command;
  EXPECT_EQ(reduced.type, CommandType::kStart);
  EXPECT_EQ(config_of(stopped.hosts[0])["pids"], json({1, 3}));
  EXPECT_EQ(config_of(stopped.hosts[0])["stop_level"], "process");
  EXPECT_EQ(config_of(stopped.hosts[0])["duration"], 60);
  EXPECT_EQ(reduced.request_ids.size(), 2u);
  EXPECT_EQ(current("web-01").command_id, reduced.command_id);
  // A later start merges with the reduced one and is a plain start again.
  SubmitOutcome again = submit(start({{"web-01", PidList{4}}}));
  EXPECT_EQ(config_of(again.hosts[0])["pids"], json({1, 3, 4}));
  EXPECT_FALSE(config_of(again.hosts[0]).contains("stop_level"));
  (void)started;
}

TEST_P(StoreTest, AProcessStopOfEveryPidIsAHostStop) {
  submit(start({{"web-01", PidList{1, 2}}}));
  SubmitOutcome stopped = submit(stop({{"web-01", PidList{1, 2}}}, StopLevel::kProcess));
  EXPECT_EQ(stopped.hosts[0].action, PlanAction::kHostStop);
  EXPECT_EQ(stopped.hosts[0].command->type, CommandType::kStop);
  EXPECT_EQ(config_of(stopped.hosts[0]), json({{"stop_level", "host"}}));
}

TEST_P(StoreTest, AProcessStopOfPidsNotProfiledChangesNothing) {
  SubmitOutcome started = submit(start({{"web-01", PidList{1}}}));
  SubmitOutcome stopped = submit(stop({{"web-01", PidList{7}}}, StopLevel::kProcess));
  EXPECT_EQ(stopped.hosts[0].action, PlanAction::kUnchanged);
  EXPECT_FALSE(stopped.hosts[0].command);
  EXPECT_EQ(current("web-01").command_id, started.hosts[0].command->command_id);
  EXPECT_EQ(store_->get_request(stopped.request_id)->status, RequestStatus::kCompleted);
}

TEST_P(StoreTest, AProcessStopWithoutAPidListToSubtractFromIsSentAsOne) {
  submit(start({{"web-01", std::nullopt}}));
  SubmitOutcome stopped =
      submit(stop({{"web-01", PidList{7}}, {"web-02", PidList{8}}}, StopLevel::kProcess));
  for (const HostPlan& host : stopped.hosts) {
    EXPECT_EQ(host.action, PlanAction::kProcessStop) << host.hostname;
    EXPECT_EQ(host.command->type, CommandType::kStop);
  }
  EXPECT_EQ(config_of(stopped.hosts[1]), json({{"stop_level", "process"}, {"pids", {8}}}));
}

TEST_P(StoreTest, AHostStopReplacesEverything) {
  StartRequest continuous = start({{"web-01", PidList{1, 2}}});
  continuous.continuous = true;
  SubmitOutcome started = submit(continuous);
  SubmitOutcome stopped = submit(stop({{"web-01", std::nullopt}}, StopLevel::kHost));
  EXPECT_EQ(stopped.hosts[0].action, PlanAction::kHostStop);
  EXPECT_EQ(stopped.hosts[0].replaces, started.hosts[0].command->command_id);
  EXPECT_EQ(stopped.hosts[0].command->request_ids, std::vector<std::string>{stopped.request_id});
  // After a stop, a start starts afresh.
  SubmitOutcome restarted = submit(start({{"web-01", PidList{5}}}));
  EXPECT_EQ(restarted.hosts[0].action, PlanAction::kReplaced);
  EXPECT_EQ(config_of(restarted.hosts[0])["pids"], json({5}));
  EXPECT_EQ(config_of(restarted.hosts[0])["continuous"], false);
}

TEST_P(StoreTest, RequestsAreCheckedBeforeAnythingIsWritten) {
  StartRequest reserved = start({{"web-01", std::nullopt}});
  reserved.additional_args = {{"pids", {1}}};
  auto refused = commands_->submit_start(reserved);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("\"pids\""), std::string::npos);

  EXPECT_FALSE(commands_->submit_start(start({{"web-01", PidList{}}})).ok());
  EXPECT_FALSE(commands_->submit_start(start({{"web-01", PidList{-3}}})).ok());
  EXPECT_FALSE(commands_->submit_start(start({})).ok());
  StartRequest zero = start({{"web-01", std::nullopt}});
  zero.duration_s = 0;
  EXPECT_FALSE(commands_->submit_start(zero).ok());
  EXPECT_FALSE(commands_->submit_stop(stop({{"web-01", PidList{1}}}, StopLevel::kHost)).ok());
  EXPECT_FALSE(commands_->submit_stop(stop({{"web-01", std::nullopt}}, StopLevel::kProcess)).ok());
  EXPECT_TRUE(store_->list_commands({}).value().empty());
}

TEST_P(StoreTest, DryRunPlansButWritesNothing) {
  SubmitOutcome started = submit(start({{"web-01", PidList{1}}}));
  StartRequest dry = start({{"web-01", PidList{2}}, {"web-02", std::nullopt}});
  dry.dry_run = true;
  SubmitOutcome planned = submit(dry);
  EXPECT_TRUE(planned.dry_run);
  ASSERT_EQ(planned.hosts.size(), 2u);
  EXPECT_EQ(planned.hosts[0].action, PlanAction::kMerged);
  EXPECT_EQ(planned.hosts[0].pids, (PidList{1, 2}));
  EXPECT_EQ(planned.hosts[0].command->command_id, "") << "a dry run's commands have no id";
  EXPECT_EQ(planned.hosts[1].action, PlanAction::kNew);
  EXPECT_EQ(planned.hosts[1].pids, std::nullopt);

  StopRequest dry_stop = stop({{"web-01", std::nullopt}}, StopLevel::kHost);
  dry_stop.dry_run = true;
  submit(dry_stop);

  auto commands = store_->list_commands({});
  ASSERT_EQ(commands->size(), 1u);
  EXPECT_EQ(commands->front().command_id, started.hosts[0].command->command_id);
  EXPECT_EQ(store_->get_request(planned.request_id).error().kind(), ErrorKind::kNotFound);
  EXPECT_EQ(store_->get_command(planned.hosts[1].command->command_id).error().kind(),
            ErrorKind::kNotFound);
}

TEST_P(StoreTest, TheFirstCompletionReportWins) {
  SubmitOutcome started = submit(start({{"web-01", std::nullopt}}));
  const std::string id = started.hosts[0].command->command_id;

  CompletionOutcome early = complete(id, "web-01");
  EXPECT_FALSE(early.accepted);
  EXPECT_NE(early.message.find("not been delivered"), std::string::npos) << early.message;

  beat("web-01");
  EXPECT_FALSE(complete(id, "web-99").accepted);
  EXPECT_FALSE(complete("no-such-command", "web-01").accepted);

  now_ += seconds(2);
  auto first = store_->record_completion(
      {id, "web-01", CommandStatus::kFailed, 3, std::string("perf: not found"), "/tmp/out"});
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->accepted) << first->message;
  CompletionOutcome second = complete(id, "web-01", CommandStatus::kCompleted);
  EXPECT_FALSE(second.accepted);
  EXPECT_NE(second.message.find("already reported failed"), std::string::npos) << second.message;

  auto command = store_->get_command(id);
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->status, CommandStatus::kFailed);
  EXPECT_EQ(command->completed_at, now_);
  EXPECT_EQ(command->execution_time, 3);
  EXPECT_EQ(command->error_message, "perf: not found");
  EXPECT_EQ(command->results_path, "/tmp/out");
  EXPECT_EQ(store_->get_request(started.request_id)->status, RequestStatus::kFailed);

  auto bad_status = store_->record_completion(
      {id, "web-01", CommandStatus::kSent, 0, std::nullopt, std::nullopt});
  EXPECT_FALSE(bad_status.ok());
}

TEST_P(StoreTest, ProfilesRoundTripCompressed) {
  std::string collapsed = "# {\"metadata\": {\"hostname\": \"web-01\"}}\n";
  for (int i = 0; i < 2000; ++i) {
    collapsed += "0;;python;main;handle_request;parse_" + std::to_string(i % 17) + " " +
                 std::to_string(i) + "\n";
  }
  auto gpid =
      store_->store_profile(plain_upload("web", "web-01", now_ - seconds(60), now_, collapsed));
  ASSERT_TRUE(gpid.ok()) << gpid.error().message();
  auto text = store_->read_profile(*gpid);
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, collapsed);

  auto stored = store_->get_profile(*gpid);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->raw_size, static_cast<int64_t>(collapsed.size()));
  EXPECT_LT(stored->compressed_size * 4, stored->raw_size);
  EXPECT_EQ(stored->received_at, now_);

  std::string body;
  if (GetParam() == Dialect::kSqlite) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir_ / "data" / "profiles")) {
      files.push_back(entry.path());
    }
    ASSERT_EQ(files.size(), 1u);
    body = read_file(files[0]).value();
  } else {
    auto db = open_database();
    auto select = db->prepare("SELECT gzip FROM profile_bodies");
    ASSERT_TRUE(select->step().value());
    body = select->blob(0);
  }
  EXPECT_EQ(static_cast<int64_t>(body.size()), stored->compressed_size);
  EXPECT_EQ(body.substr(0, 2), "\x1f\x8b");  // gzip

  EXPECT_EQ(store_->read_profile(*gpid + 1).error().kind(), ErrorKind::kNotFound);
  auto empty = store_->store_profile(plain_upload("web", "web-01", now_, now_, ""));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(store_->read_profile(*empty).value(), "");
}

TEST_P(StoreTest, ProfilesAreListedByServiceHostAndTime) {
  auto at = [this](int minutes) { return now_ + std::chrono::minutes(minutes); };
  std::map<std::string, int64_t> gpids;
  for (auto [name, service, host, minute] :
       std::vector<std::tuple<std::string, std::string, std::string, int>>{
           {"a", "web", "web-01", 0},
           {"b", "web", "web-02", 1},
           {"c", "batch", "web-01", 2},
           {"d", "web", "web-01", 3}}) {
    auto gpid = store_->store_profile(
        plain_upload(service, host, at(minute), at(minute) + seconds(59), name));
    ASSERT_TRUE(gpid.ok());
    gpids[name] = *gpid;
  }
  auto names = [&](const ProfileFilter& filter) {
    auto profiles = store_->list_profiles(filter);
    std::vector<int64_t> found;
    for (const StoredProfile& profile : profiles.value()) found.push_back(profile.gpid);
    return found;
  };
  EXPECT_EQ(names({}), (std::vector<int64_t>{gpids["d"], gpids["c"], gpids["b"], gpids["a"]}));
  EXPECT_EQ(names({"web", std::nullopt, std::nullopt, std::nullopt, 100}),
            (std::vector<int64_t>{gpids["d"], gpids["b"], gpids["a"]}));
  EXPECT_EQ(names({"web", "web-01", std::nullopt, std::nullopt, 100}),
            (std::vector<int64_t>{gpids["d"], gpids["a"]}));
  // Overlapping [1:30, 2:30]: b ends at 1:59, c starts at 2:00.
  EXPECT_EQ(names({std::nullopt, std::nullopt, at(1) + seconds(30), at(2) + seconds(30), 100}),
            (std::vector<int64_t>{gpids["c"], gpids["b"]}));
  EXPECT_EQ(names({std::nullopt, std::nullopt, std::nullopt, std::nullopt, 1}),
            std::vector<int64_t>{gpids["d"]});
}

TEST_P(StoreTest, SqlMetacharactersAreStoredVerbatim) {
  const std::string host = "h'; DROP TABLE hosts; --\"%_\\";
  const std::string service = "svc' OR '1'='1";
  HostHeartbeat odd = heartbeat(host, service);
  odd.extra = {{"note", "it's \"quoted\""}};
  ASSERT_TRUE(commands_->record_heartbeat(odd).ok());
  ASSERT_TRUE(commands_->record_heartbeat(heartbeat("plain", "svc")).ok());
  SubmitOutcome started = submit(start({{host, PidList{1}}}, service));
  auto gpid = store_->store_profile(plain_upload(service, host, now_, now_, "x 1\n"));
  ASSERT_TRUE(gpid.ok());

  auto hosts = store_->list_hosts({std::nullopt, service, 1000, {}});
  ASSERT_TRUE(hosts.ok());
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ(hosts->front().last_heartbeat.hostname, host);
  EXPECT_EQ(hosts->front().last_heartbeat.extra, odd.extra);
  EXPECT_EQ(hosts->front().current_command->command_id, started.hosts[0].command->command_id);
  EXPECT_EQ(store_->list_hosts().value().size(), 2u);
  EXPECT_EQ(store_->list_commands({host, service, true, 10, {}}).value().size(), 1u);
  EXPECT_TRUE(store_->list_commands({"h%", service, true, 10, {}}).value().empty());
  EXPECT_EQ(store_->list_profiles({service, host, std::nullopt, std::nullopt, 10}).value().size(),
            1u);
}

TEST_P(StoreTest, EverythingSurvivesARestart) {
  HostHeartbeat beat_in = heartbeat("web-01");
  beat_in.agent_health = json{{"state", "idle"}};
  ASSERT_TRUE(commands_->record_heartbeat(beat_in).ok());
  StartRequest request = start({{"web-01", PidList{4, 2}}});
  request.additional_args = {{"profiler_configs", {{"pyperf", "disabled"}}}};
  SubmitOutcome started = submit(request);
  auto delivered = commands_->record_heartbeat(beat_in);
  ASSERT_TRUE(delivered.ok() && delivered->command);
  EXPECT_TRUE(delivered->first_delivery);
  auto again = commands_->record_heartbeat(beat_in);
  ASSERT_TRUE(again.ok() && again->command);
  EXPECT_FALSE(again->first_delivery) << "a re-sent command is not a new delivery";
  ASSERT_TRUE(complete(delivered->command->command_id, "web-01").accepted);
  auto gpid = store_->store_profile(plain_upload("web", "web-01", now_, now_, "a;b 3\n"));
  ASSERT_TRUE(gpid.ok());
  auto before = store_->list_commands({}).value();

  reopen();
  now_ += seconds(10);
  auto hosts = store_->list_hosts().value();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0].last_heartbeat.agent_health, beat_in.agent_health);
  ASSERT_TRUE(hosts[0].current_command);
  EXPECT_EQ(hosts[0].current_command->status, CommandStatus::kCompleted);
  auto after = store_->list_commands({}).value();
  ASSERT_EQ(after.size(), before.size());
  EXPECT_EQ(after[0].command_id, before[0].command_id);
  EXPECT_EQ(after[0].combined_config, before[0].combined_config);
  EXPECT_EQ(store_->read_profile(*gpid).value(), "a;b 3\n");
  auto recorded = store_->get_request(started.request_id);
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(recorded->status, RequestStatus::kCompleted);
  EXPECT_EQ(recorded->target_hosts.at("web-01"), (PidList{2, 4}));
  EXPECT_EQ(recorded->additional_args, request.additional_args);
  // Merging after a restart reads the stored pid map.
  SubmitOutcome merged = submit(start({{"web-01", PidList{3}}}));
  EXPECT_EQ(config_of(merged.hosts[0])["pids"], json({2, 3, 4}));
}

// What only one of the stores has: files beside the database (SQLite), several stores on one
// database at once (PostgreSQL).
class SqliteStoreTest : public StoreTest {};
INSTANTIATE_TEST_SUITE_P(Stores, SqliteStoreTest, ::testing::Values(Dialect::kSqlite), store_name);
class PostgresStoreTest : public StoreTest {};
INSTANTIATE_TEST_SUITE_P(Stores, PostgresStoreTest, ::testing::Values(Dialect::kPostgres),
                         store_name);

TEST_P(SqliteStoreTest, AProfileFileWithoutARowIsRemovedAtOpen) {
  auto gpid = store_->store_profile(plain_upload("web", "web-01", now_, now_, "kept 1\n"));
  ASSERT_TRUE(gpid.ok());
  fs::path profiles = dir_ / "data" / "profiles";
  ASSERT_TRUE(write_file_atomically(profiles / (random_uuid() + ".col.gz"), "stray").ok());
  ASSERT_TRUE(write_file_atomically(profiles / ".x.col.gz.tmp.abcdef", "partial").ok());
  ASSERT_TRUE(write_file_atomically(profiles / "README", "not ours").ok());
  reopen();
  EXPECT_EQ(std::distance(fs::directory_iterator(profiles), fs::directory_iterator()), 2);
  EXPECT_EQ(store_->read_profile(*gpid).value(), "kept 1\n");
}

TEST_P(StoreTest, OperationsFromSeveralThreadsAreSerialised) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t, &failures] {
      const std::string host = "web-" + std::to_string(t);
      auto count = [&failures](const auto& result) {
        if (result.ok()) return;
        ++failures;
        ADD_FAILURE() << result.error().message();
      };
      for (int i = 0; i < 25; ++i) {
        count(commands_->record_heartbeat(heartbeat(host)));
        count(commands_->submit_start(start({{host, PidList{i + 1}}})));
        count(store_->store_profile(plain_upload("web", host, now_, now_, "f 1\n")));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(store_->list_commands({}).value().size(), 100u);
  EXPECT_EQ(store_->list_profiles({std::nullopt, std::nullopt, std::nullopt, std::nullopt, -1})
                .value()
                .size(),
            100u);
  for (int t = 0; t < 4; ++t) {
    // Every start merged with the one before it.
    EXPECT_EQ(current("web-" + std::to_string(t)).combined_config["pids"].size(), 25u);
  }
}

// The child acknowledges each write on a pipe after the call returned; it is killed mid-stream.
// Every write it acknowledged must be there when the store is opened again.
TEST_P(StoreTest, AcknowledgedWritesSurviveSigkill) {
  store_.reset();  // the child opens the store; one per directory
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    auto store = open_another();
    if (!store) ::_exit(2);
    for (int i = 0;; ++i) {
      StartRequest request;
      request.service_name = "crash";
      request.target_hosts = {{"host-" + std::to_string(i % 7), PidList{i + 1}}};
      auto outcome = control::Commands(**store).submit_start(request);
      if (!outcome) ::_exit(3);
      std::string line =
          "R " + outcome->request_id + " " + outcome->hosts[0].command->command_id + "\n";
      if (i % 3 == 0) {
        auto gpid = (*store)->store_profile(plain_upload(
            "crash", "host", TimePoint{}, TimePoint{}, "stack;frame " + std::to_string(i) + "\n"));
        if (!gpid) ::_exit(4);
        line += "P " + std::to_string(*gpid) + " " + std::to_string(i) + "\n";
      }
      if (::write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        ::_exit(5);
      }
    }
  }
  ::close(fds[1]);
  std::string received;
  char buffer[4096];
  bool killed = false;
  for (;;) {
    ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
    if (!killed && std::count(received.begin(), received.end(), '\n') >= 60) {
      ::kill(child, SIGKILL);
      killed = true;
    }
  }
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);

  open_store();
  std::istringstream lines(received.substr(0, received.rfind('\n') + 1));
  std::string kind;
  int requests = 0;
  int profiles = 0;
  while (lines >> kind) {
    if (kind == "R") {
      std::string request_id, command_id;
      lines >> request_id >> command_id;
      EXPECT_TRUE(store_->get_request(request_id).ok()) << request_id;
      EXPECT_TRUE(store_->get_command(command_id).ok()) << command_id;
      ++requests;
    } else {
      int64_t gpid = 0;
      int i = 0;
      lines >> gpid >> i;
      auto text = store_->read_profile(gpid);
      ASSERT_TRUE(text.ok()) << text.error().message();
      EXPECT_EQ(*text, "stack;frame " + std::to_string(i) + "\n");
      ++profiles;
    }
  }
  EXPECT_GE(requests, 40);
  EXPECT_GE(profiles, 10);
  // One current command per host, whatever the moment of the kill.
  EXPECT_EQ(store_->list_commands({std::nullopt, "crash", false, 100, {}}).value().size(), 7u);
}

// A database made by the first schema, with data in it, opened by this binary: migrated to the
// last version, its data kept.
TEST_P(StoreTest, AnOlderSchemaIsMigratedWithItsData) {
  store_.reset();
  new_location();
  {
    auto db = open_database();
    ASSERT_TRUE(db);
    ASSERT_EQ(migrate(*db, schema_migrations(GetParam()).first(1)).value(), 1);
    ASSERT_TRUE(db->execute(R"sql(
INSERT INTO hosts (hostname, service_name, ip_address, status, first_heartbeat_ms,
                   last_heartbeat_ms, received_command_ids, executed_command_ids,
                   supported_perf_events, extra)
VALUES ('old-host', 'web', '10.0.0.1', 'idle', 1, 2, '[]', '[]', '[]', '{}'))sql")
                    .ok());
  }
  open_store();
  auto db = open_database();
  EXPECT_EQ(schema_version(*db).value(), static_cast<int>(schema_migrations(GetParam()).size()));
  auto hosts = store_->list_hosts();
  ASSERT_TRUE(hosts.ok()) << hosts.error().message();
  ASSERT_EQ(hosts->size(), 1u);
  EXPECT_EQ(hosts->front().last_heartbeat.hostname, "old-host");
}

TEST_P(StoreTest, RetentionDeletesOldProfilesAndHistoryButNotCurrentCommands) {
  const TimePoint began = now_;
  StartRequest one_shot = start({{"web-01", std::nullopt}});
  one_shot.duration_s = 60;
  SubmitOutcome first = submit(one_shot);
  ASSERT_TRUE(beat("web-01"));
  ASSERT_TRUE(complete(first.hosts[0].command->command_id, "web-01").accepted);
  now_ += seconds(61);                                               // it has run its course
  SubmitOutcome second = submit(start({{"web-01", std::nullopt}}));  // replaces the finished one
  auto old_profile = store_->store_profile(plain_upload("web", "web-01", now_, now_, "old 1\n"));
  ASSERT_TRUE(old_profile.ok());
  SubmitOutcome unrelated = submit(start({{"web-02", std::nullopt}}));

  now_ = began + std::chrono::hours(24 * 10);
  SubmitOutcome third = submit(stop({{"web-01", std::nullopt}}, StopLevel::kHost));
  auto new_profile = store_->store_profile(plain_upload("web", "web-01", now_, now_, "new 1\n"));
  ASSERT_TRUE(new_profile.ok());

  // In batches of one: each call deletes at most one row of each kind.
  ExpiredRows total;
  for (int calls = 0;; ++calls) {
    ASSERT_LT(calls, 10);
    auto expired = store_->expire_before(began + std::chrono::hours(24 * 5), 1);
    ASSERT_TRUE(expired.ok()) << expired.error().message();
    EXPECT_LE(std::max({expired->profiles, expired->commands, expired->requests}), 1);
    if (expired->profiles + expired->commands + expired->requests == 0) break;
    total.profiles += expired->profiles;
    total.commands += expired->commands;
    total.requests += expired->requests;
  }
  EXPECT_EQ(total.profiles, 1);
  EXPECT_EQ(total.commands, 1);  // the first command; the second was replaced on day 10
  EXPECT_EQ(total.requests, 1);  // the first request, which no command carries out any more
  EXPECT_EQ(store_->read_profile(*old_profile).error().kind(), ErrorKind::kNotFound);
  EXPECT_EQ(store_->read_profile(*new_profile).value(), "new 1\n");
  EXPECT_EQ(store_->get_command(first.hosts[0].command->command_id).error().kind(),
            ErrorKind::kNotFound);
  EXPECT_EQ(store_->get_request(first.request_id).error().kind(), ErrorKind::kNotFound);
  EXPECT_TRUE(store_->get_command(second.hosts[0].command->command_id).ok());
  EXPECT_TRUE(store_->get_request(second.request_id).ok());
  // Current commands stay however old.
  EXPECT_EQ(current("web-02").command_id, unrelated.hosts[0].command->command_id);
  EXPECT_EQ(current("web-01").command_id, third.hosts[0].command->command_id);
  EXPECT_EQ(column("SELECT command_id FROM executions"), "");  // the first one's went with it
  if (GetParam() == Dialect::kSqlite) {
    EXPECT_EQ(
        std::distance(fs::directory_iterator(dir_ / "data" / "profiles"), fs::directory_iterator()),
        1);
  }
}

TEST_P(StoreTest, TheRetentionThreadSweepsAtStartAndStopsWhenDestroyed) {
  auto gpid = store_->store_profile(plain_upload("web", "web-01", now_, now_, "old 1\n"));
  ASSERT_TRUE(gpid.ok());
  TimePoint later = now_ + std::chrono::hours(24 * 3);
  {
    control::Retention retention(*store_, control::RetentionPolicy{std::chrono::hours(24 * 2)},
                                 std::chrono::hours(1), [later] { return later; });
    ASSERT_TRUE(testing::eventually([&] { return retention.sweeps() >= 1; }, seconds(30)));
  }
  EXPECT_EQ(store_->read_profile(*gpid).error().kind(), ErrorKind::kNotFound);
}

// Two stores on one database are two replicas: a heartbeat answered by either delivers a pending
// command once, and one completion is recorded, however the calls interleave.
TEST_P(PostgresStoreTest, ReplicasDeliverACommandOnceAndRecordOneCompletion) {
  auto replica = open_another();
  ASSERT_TRUE(replica.ok()) << replica.error().message();
  std::vector<Store*> stores = {store_.get(), replica->get()};
  for (int round = 0; round < 10; ++round) {
    const std::string host = "host-" + std::to_string(round);
    SubmitOutcome started = submit(start({{host, std::nullopt}}));
    const std::string id = started.hosts[0].command->command_id;
    std::atomic<int> deliveries{0};
    std::atomic<int> accepted{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 6; ++t) {
      threads.emplace_back([&, t] {
        Store& store = *stores[t % 2];
        auto answer = store.record_heartbeat(heartbeat(host));
        ASSERT_TRUE(answer.ok()) << answer.error().message();
        if (answer->first_delivery) ++deliveries;
        auto outcome =
            store.record_completion({id, host, CommandStatus::kCompleted, 1, {}, std::nullopt});
        ASSERT_TRUE(outcome.ok()) << outcome.error().message();
        if (outcome->accepted) ++accepted;
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(deliveries, 1) << host;
    EXPECT_EQ(accepted, 1) << host;
  }
  EXPECT_EQ(column("SELECT COUNT(*) FROM executions"), "10");
  EXPECT_EQ(column("SELECT COUNT(*) FROM executions WHERE status = 'completed'"), "10");
}

TEST_P(PostgresStoreTest, ARequestMadeOnOneReplicaIsDeliveredByAnother) {
  auto replica = open_another();
  ASSERT_TRUE(replica.ok()) << replica.error().message();
  SubmitOutcome started = submit(start({{"web-01", std::nullopt}}));
  auto answer = control::Commands(**replica).record_heartbeat(heartbeat("web-01"));
  ASSERT_TRUE(answer.ok() && answer->command);
  EXPECT_EQ(answer->command->command_id, started.hosts[0].command->command_id);
  EXPECT_TRUE(answer->first_delivery);
  auto gpid = (*replica)->store_profile(plain_upload("web", "web-01", now_, now_, "a;b 2\n"));
  ASSERT_TRUE(gpid.ok());
  EXPECT_EQ(store_->read_profile(*gpid).value(), "a;b 2\n");
}

TEST_P(PostgresStoreTest, ServersStartingAtOnceMigrateTheDatabaseOnce) {
  store_.reset();
  new_location();
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto store = open_another();
      EXPECT_TRUE(store.ok()) << store.error().message();
      if (store.ok()) ++opened;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(opened, 4);
  EXPECT_EQ(column("SELECT version FROM dormant_schema"),
            std::to_string(postgres_migrations().size()));
}

// While the database is down every operation fails with kUnavailable (the API's 503); once it is
// back the store reconnects by itself.
TEST_P(PostgresStoreTest, OperationsFailWhileTheDatabaseIsDownAndRecoverAfter) {
  ASSERT_TRUE(commands_->record_heartbeat(heartbeat("web-01")).ok());
  ASSERT_TRUE(cluster_->stop().ok());
  auto down = commands_->record_heartbeat(heartbeat("web-01"));
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().kind(), ErrorKind::kUnavailable) << down.error().message();
  auto listing = store_->list_hosts();
  ASSERT_FALSE(listing.ok());
  EXPECT_EQ(listing.error().kind(), ErrorKind::kUnavailable) << listing.error().message();
  ASSERT_TRUE(cluster_->restart().ok());
  // Connections that died with the server fail once each, then are replaced.
  ASSERT_TRUE(testing::eventually(
      [&] { return commands_->record_heartbeat(heartbeat("web-01")).ok(); }, seconds(30)));
  EXPECT_EQ(store_->list_hosts().value().size(), 1u);
}

}  // namespace
}  // namespace dormant::server::storage
