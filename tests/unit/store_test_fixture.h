// The store's test fixtures: a directory of its own for each test, and StoreTest, whose TEST_Ps
// run on SQLite and on a PostgreSQL server of their own.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/support/postgres_cluster.h"

#include "server/control/commands.h"
#include "server/storage/postgres_database.h"
#include "server/storage/sqlite_database.h"
#include "server/storage/store.h"

namespace dormant::server::storage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::seconds;

fs::path test_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return fs::temp_directory_path() / ("dormant-storage-" + std::to_string(::getpid()) + "-" +
                                      test->test_suite_name() + "-" + test->name());
}

class StorageDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_dir();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

[[maybe_unused]] std::string store_name(const ::testing::TestParamInfo<Dialect>& info) {
  return info.param == Dialect::kSqlite ? "Sqlite" : "Postgres";
}

// The store's behaviour, the same on both databases: every TEST_P runs on SQLite and on a
// PostgreSQL server of its own.
class StoreTest : public StorageDirTest, public ::testing::WithParamInterface<Dialect> {
 protected:
  void SetUp() override {
    StorageDirTest::SetUp();
    if (GetParam() == Dialect::kPostgres) {
      if (std::string why = testing::PostgresCluster::unavailable_reason(); !why.empty()) {
        GTEST_SKIP() << why;
      }
      auto cluster = testing::PostgresCluster::start();
      ASSERT_TRUE(cluster.ok()) << cluster.error().message();
      cluster_ = std::move(*cluster);
      new_location();
    }
    open_store();
  }
  void TearDown() override {
    commands_.reset();
    store_.reset();
    cluster_.reset();
    StorageDirTest::TearDown();
  }

  // Another store on the same data: a second replica (PostgreSQL), or the next run of the server.
  Result<std::unique_ptr<Store>> open_another() {
    StoreOptions options = options_;
    options.clock = [this] { return now_; };
    if (GetParam() == Dialect::kSqlite) return Store::open(dir_ / "data", options);
    return Store::open_postgres(url_, options);
  }
  void open_store() {
    auto store = open_another();
    ASSERT_TRUE(store.ok()) << store.error().message();
    store_ = std::move(*store);
    commands_ = std::make_unique<control::Commands>(*store_);
  }
  void reopen() {
    commands_.reset();
    store_.reset();
    open_store();
  }
  // Later stores open an empty database: a new one on the same server, or a new directory.
  void new_location() {
    if (GetParam() == Dialect::kSqlite) {
      fs::remove_all(dir_ / "data");
      return;
    }
    auto url = cluster_->create_database();
    ASSERT_TRUE(url.ok()) << url.error().message();
    url_ = *url;
  }
  // A plain connection to the store's database, for what the store does not show.
  std::unique_ptr<Database> open_database() {
    if (GetParam() == Dialect::kSqlite) {
      fs::create_directories(dir_ / "data");
      auto db = SqliteDatabase::open(dir_ / "data" / "dormant.db");
      EXPECT_TRUE(db.ok()) << db.error().message();
      return db.ok() ? std::move(*db) : nullptr;
    }
    auto db = PostgresDatabase::connect(url_);
    EXPECT_TRUE(db.ok()) << db.error().message();
    return db.ok() ? std::move(*db) : nullptr;
  }
  // The values of one column, in the order given, joined by ','.
  std::string column(const std::string& sql) {
    auto db = open_database();
    auto rows = db->prepare(sql);
    EXPECT_TRUE(rows.ok()) << rows.error().message();
    std::string joined;
    for (;;) {
      auto row = rows->step();
      EXPECT_TRUE(row.ok()) << row.error().message();
      if (!row.ok() || !*row) break;
      joined += (joined.empty() ? "" : ",") + rows->text(0);
    }
    return joined;
  }

  // A profile as the store takes it, without the rollup an upload's stacks give.
  static ProfileUpload plain_upload(std::string service, std::string hostname, TimePoint start,
                                    TimePoint end, std::string collapsed) {
    ProfileUpload upload;
    upload.service_name = std::move(service);
    upload.hostname = std::move(hostname);
    upload.start_time = start;
    upload.end_time = end;
    upload.collapsed = std::move(collapsed);
    return upload;
  }

  static HostHeartbeat heartbeat(const std::string& hostname, const std::string& service = "web") {
    HostHeartbeat beat;
    beat.hostname = hostname;
    beat.service_name = service;
    beat.ip_address = "10.0.0.7";
    return beat;
  }

  std::optional<Command> beat(const std::string& hostname, const std::string& service = "web") {
    auto answer = commands_->record_heartbeat(heartbeat(hostname, service));
    EXPECT_TRUE(answer.ok()) << answer.error().message();
    return answer.ok() ? answer->command : std::nullopt;
  }

  static StartRequest start(TargetHosts hosts, const std::string& service = "web") {
    StartRequest request;
    request.service_name = service;
    request.target_hosts = std::move(hosts);
    return request;
  }

  static StopRequest stop(TargetHosts hosts, StopLevel level) {
    StopRequest request;
    request.service_name = "web";
    request.target_hosts = std::move(hosts);
    request.level = level;
    return request;
  }

  SubmitOutcome submit(const StartRequest& request) {
    auto outcome = commands_->submit_start(request);
    EXPECT_TRUE(outcome.ok()) << outcome.error().message();
    return outcome.ok() ? *outcome : SubmitOutcome{};
  }

  SubmitOutcome submit(const StopRequest& request) {
    auto outcome = commands_->submit_stop(request);
    EXPECT_TRUE(outcome.ok()) << outcome.error().message();
    return outcome.ok() ? *outcome : SubmitOutcome{};
  }

  Command current(const std::string& hostname, const std::string& service = "web") {
    auto commands = store_->list_commands({hostname, service, false, 10, {}});
    EXPECT_TRUE(commands.ok());
    EXPECT_EQ(commands->size(), 1u);
    return commands->empty() ? Command{} : commands->front();
  }

  // What the agent receives for a command a request issued: the outcome names the command, the
  // store has it.
  json config_of(const HostPlan& host) {
    EXPECT_TRUE(host.command) << host.hostname;
    if (!host.command) return nullptr;
    auto command = store_->get_command(host.command->command_id);
    EXPECT_TRUE(command.ok()) << command.error().message();
    return command.ok() ? command->combined_config : json();
  }

  CompletionOutcome complete(const std::string& command_id, const std::string& hostname,
                             CommandStatus status = CommandStatus::kCompleted) {
    auto outcome =
        store_->record_completion({command_id, hostname, status, 0, std::nullopt, std::nullopt});
    EXPECT_TRUE(outcome.ok()) << outcome.error().message();
    return outcome.ok() ? *outcome : CompletionOutcome{};
  }

  TimePoint now_ = from_unix_ms(1'750'000'000'000);
  StoreOptions options_;  // for the next store opened; its clock is now_
  std::unique_ptr<testing::PostgresCluster> cluster_;
  std::string url_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<control::Commands> commands_;  // on store_
};

}  // namespace
}  // namespace dormant::server::storage
