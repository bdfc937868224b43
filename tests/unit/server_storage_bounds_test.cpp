// Issue 22's attacks on the store, on SQLite and on PostgreSQL: hosts that pile up or carry
// junk, a request that fans out to many hosts with large arguments, profiles that would fill
// the disk. Each test performs the attack and asserts the bound.
#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store_test_fixture.h"
#include "tests/support/eventually.h"

#include "server/control/command_plan.h"
#include "server/control/request_checks.h"
#include "server/control/retention.h"
#include "server/storage/migrations.h"

namespace dormant::server::storage {
namespace {

class StoreBoundsTest : public StoreTest {
 protected:
  // What the database takes on disk: SQLite's file and its WAL, PostgreSQL's database.
  int64_t database_bytes() {
    if (GetParam() == Dialect::kSqlite) {
      int64_t bytes = 0;
      for (const char* name : {"dormant.db", "dormant.db-wal"}) {
        std::error_code error;
        auto size = fs::file_size(dir_ / "data" / name, error);
        if (!error) bytes += static_cast<int64_t>(size);
      }
      return bytes;
    }
    return std::stoll(column("SELECT pg_database_size(current_database())"));
  }

  // `bytes` of random hex: what neither gzip nor PostgreSQL's compression shrinks much.
  static std::string junk(size_t bytes) {
    std::mt19937_64 random(7);
    constexpr std::string_view kHex = "0123456789abcdef";
    std::string text(bytes, '0');
    for (char& c : text) c = kHex[random() & 0xf];
    return text;
  }

  static TargetHosts hosts(int count, const std::string& prefix = "host-") {
    TargetHosts targets;
    for (int i = 0; i < count; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "%s%05d", prefix.c_str(), i);
      targets.emplace(name, std::nullopt);
    }
    return targets;
  }
};

INSTANTIATE_TEST_SUITE_P(Stores, StoreBoundsTest,
                         ::testing::Values(Dialect::kSqlite, Dialect::kPostgres), store_name);

// Server finding 3: hosts with junk in extra and agent_health. A listing holds its page only,
// with the current commands of those hosts.
TEST_P(StoreBoundsTest, AHostListingHoldsItsPageOnly) {
  const std::string filler = junk(60 << 10);
  for (int i = 0; i < 30; ++i) {
    HostHeartbeat beat = heartbeat("junk-" + std::to_string(100 + i));
    beat.extra = {{"junk", filler}};
    beat.agent_health = json{{"junk", filler}};
    ASSERT_TRUE(commands_->record_heartbeat(beat).ok());
  }
  SubmitOutcome started = submit(start({{"junk-101", std::nullopt}, {"junk-120", std::nullopt}}));

  auto page = store_->list_hosts({std::nullopt, "web", 10, {}});
  ASSERT_TRUE(page.ok()) << page.error().message();
  ASSERT_EQ(page->size(), 10u);
  EXPECT_EQ(page->front().last_heartbeat.hostname, "junk-100");
  EXPECT_EQ(page->back().last_heartbeat.hostname, "junk-109");
  EXPECT_FALSE((*page)[0].current_command);
  ASSERT_TRUE((*page)[1].current_command);
  EXPECT_EQ((*page)[1].current_command->command_id, started.hosts[0].command->command_id);
  EXPECT_EQ((*page)[1].last_heartbeat.extra["junk"], filler);

  auto one = store_->list_hosts({"junk-120", std::nullopt, 10, {}});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  ASSERT_TRUE(one->front().current_command);
  EXPECT_EQ(one->front().current_command->command_id, started.hosts[1].command->command_id);
  EXPECT_EQ(store_->list_hosts({std::nullopt, "web", 1000, {}}).value().size(), 30u);
}

// Server finding 3: hostnames made up by the thousand and never heard from again go with the
// retention pass, in batches; hosts heard from since stay, and so do the commands of those gone.
TEST_P(StoreBoundsTest, HostsNotHeardFromAreDeletedByTheRetentionPass) {
  const TimePoint began = now_;
  constexpr int kSilent = control::Retention::kBatch + 100;  // more than one batch
  for (const auto& [hostname, pids] : hosts(kSilent, "silent-")) beat(hostname);
  SubmitOutcome started = submit(start({{"silent-00000", std::nullopt}}));
  now_ = began + std::chrono::hours(24 * 20);
  beat("heard-from");
  now_ = began + std::chrono::hours(24 * 31);
  {
    control::RetentionPolicy policy;
    policy.hosts = std::chrono::hours(24 * 30);
    control::Retention retention(*store_, policy, std::chrono::hours(1), [this] { return now_; });
    ASSERT_TRUE(testing::eventually([&] { return retention.sweeps() >= 1; }, seconds(60)));
  }
  auto left = store_->list_hosts({std::nullopt, std::nullopt, 10000, {}});
  ASSERT_TRUE(left.ok()) << left.error().message();
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().last_heartbeat.hostname, "heard-from");
  EXPECT_TRUE(store_->get_command(started.hosts[0].command->command_id).ok())
      << "a host's commands are not the host";

  // And a host that comes back is a new host.
  beat("silent-00000");
  EXPECT_EQ(store_->list_hosts({"silent-00000", std::nullopt, 1, {}}).value().size(), 1u);
}

// Server finding 4: a request that names more hosts than the cap is refused before anything is
// written, naming the cap.
TEST_P(StoreBoundsTest, ARequestForMoreHostsThanTheCapIsRefused) {
  auto refused =
      commands_->submit_start(start(hosts(static_cast<int>(control::kMaxTargetHosts) + 1)));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("at most 10000"), std::string::npos)
      << refused.error().message();
  EXPECT_EQ(column("SELECT COUNT(*) FROM profiling_requests"), "0");
  EXPECT_EQ(column("SELECT COUNT(*) FROM commands"), "0");
}

// Server finding 4: 1 MB of arguments for 300 hosts were written once per host, twice (the
// command's arguments and its combined_config): 1.15 GB. They are stored once now.
TEST_P(StoreBoundsTest, ARequestsArgumentsAreStoredOnceWhateverTheNumberOfItsHosts) {
  constexpr size_t kArgsBytes = 1 << 20;
  StartRequest request = start(hosts(300));
  request.additional_args = {{"junk", junk(kArgsBytes)}};
  beat("host-00000");
  const int64_t before = database_bytes();
  SubmitOutcome outcome = submit(request);
  ASSERT_EQ(outcome.hosts.size(), 300u);
  const int64_t grown = database_bytes() - before;
  EXPECT_LT(grown, static_cast<int64_t>(4 * kArgsBytes))
      << "the database grew by " << grown << " bytes for " << kArgsBytes << " bytes of arguments";
  EXPECT_EQ(column("SELECT COUNT(*) FROM additional_args"), "1");

  // Every command still carries them, and so does the request.
  Command last = current("host-00299");
  EXPECT_EQ(last.combined_config["junk"], request.additional_args["junk"]);
  EXPECT_EQ(beat("host-00000")->combined_config["junk"], request.additional_args["junk"]);
  EXPECT_EQ(store_->get_request(outcome.request_id).value().additional_args,
            request.additional_args);

  // The object goes when nothing refers to it any more.
  SubmitOutcome stopped = submit(stop(hosts(300), StopLevel::kHost));
  now_ += std::chrono::hours(24);
  auto expired = store_->expire_before(now_, 1000);
  ASSERT_TRUE(expired.ok()) << expired.error().message();
  EXPECT_EQ(expired->commands, 300);
  EXPECT_EQ(expired->args, 1);
  EXPECT_EQ(column("SELECT COUNT(*) FROM additional_args"), "0");
  EXPECT_EQ(current("host-00299").command_id, stopped.hosts[299].command->command_id);
}

// Server finding 4: the fan-out of a request held the store until its last host, and every
// heartbeat waited. Now a heartbeat asked for while the request runs is answered in between.
TEST_P(StoreBoundsTest, AHeartbeatIsAnsweredWhileARequestFansOut) {
  constexpr int kHosts = 5000;  // 10 transactions
  StartRequest request = start(hosts(kHosts));
  request.request_id = "fan-out";
  std::atomic<bool> submitted = false;
  std::thread fan_out([&] {
    submit(request);
    submitted = true;
  });
  // The request is recorded with its first batch; the heartbeat is asked for right after.
  while (!store_->get_request("fan-out").ok() && !submitted) std::this_thread::yield();
  auto answer = commands_->record_heartbeat(heartbeat("host-00000"));
  auto last_host = store_->list_commands({"host-04999", "web", false, 1, {}});
  const bool fan_out_over = submitted;
  fan_out.join();

  ASSERT_TRUE(answer.ok()) << answer.error().message();
  ASSERT_TRUE(answer->command) << "the first host has its command from the first batch";
  EXPECT_EQ(answer->command->request_ids, std::vector<std::string>{"fan-out"});
  ASSERT_TRUE(last_host.ok());
  EXPECT_TRUE(last_host->empty()) << "the heartbeat was answered before the last host's batch";
  EXPECT_FALSE(fan_out_over);
  // And the request went on to every host.
  EXPECT_EQ(store_->list_commands({std::nullopt, "web", false, -1, {}}).value().size(),
            static_cast<size_t>(kHosts));
  EXPECT_EQ(current("host-04999").request_ids, std::vector<std::string>{"fan-out"});
}

// Issue 40: each start merged into a host's standing one copied every request id the command
// carried: 2x the starts cost 5.1-5.8x the time and 3.3x the data. A command carries at most
// kMaxRequestsPerCommand ids now, and repeated starts cost in proportion to their number.
TEST_P(StoreBoundsTest, RepeatedStartsCostInProportionToTheirNumber) {
  auto starts = [&](const std::string& service, int count) {
    const int64_t before = std::stoll(column("SELECT COUNT(*) FROM command_requests"));
    auto begun = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) submit(start(hosts(10), service));
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    int64_t rows = std::stoll(column("SELECT COUNT(*) FROM command_requests")) - before;
    return std::make_pair(seconds, rows);
  };
  starts("warm-up", 256);  // a database that is not new: what follows is compared fairly
  auto [once_s, once_rows] = starts("once", 256);
  auto [twice_s, twice_rows] = starts("twice", 512);
  EXPECT_EQ(current("host-00003", "twice").request_ids.size(), control::kMaxRequestsPerCommand);
  double data_ratio = static_cast<double>(twice_rows) / static_cast<double>(once_rows);
  double time_ratio = twice_s / once_s;
  std::printf("256 starts: %.2f s, %lld request links; 512: %.2f s, %lld (%.2fx, %.2fx)\n", once_s,
              static_cast<long long>(once_rows), twice_s, static_cast<long long>(twice_rows),
              time_ratio, data_ratio);
  EXPECT_LE(data_ratio, 2.2);
  // Linear: 2.3-2.7x here (SQLite's pages grow with the data); quadratic, as it was, 5.1-5.8x.
  EXPECT_LE(time_ratio, 3.5) << "the time, on a shared machine, within a margin of the data's";
}

// Server finding 6: uploads stop at --max-storage-mb (both databases) and short of the
// free-space reserve (SQLite's data directory); the rest goes on.
TEST_P(StoreBoundsTest, ProfilesStopAtTheirRoomAndTheRestGoesOn) {
  EXPECT_FALSE(store_->profile_room(1 << 20).value());  // no cap: room
  const std::string collapsed = "# {}\n" + junk(64 << 10) + " 1\n";
  options_.max_profile_bytes = 100 << 10;
  reopen();
  ASSERT_TRUE(store_->store_profile(plain_upload("web", "web-01", now_, now_, collapsed)).ok());
  EXPECT_FALSE(store_->profile_room(1 << 10).value()) << "some 40 kB compressed: room for 1 kB";
  auto refusal = store_->profile_room(100 << 10);
  ASSERT_TRUE(refusal.ok());
  ASSERT_TRUE(*refusal);
  EXPECT_NE(refusal->value().find("--max-storage-mb"), std::string::npos) << **refusal;
  EXPECT_TRUE(commands_->record_heartbeat(heartbeat("web-01")).ok());
  EXPECT_EQ(submit(start({{"web-01", std::nullopt}})).hosts.size(), 1u);

  options_ = {};
  options_.min_free_bytes = uint64_t{1} << 60;  // more than any disk
  reopen();
  auto reserve = store_->profile_room(1);
  ASSERT_TRUE(reserve.ok());
  if (GetParam() == Dialect::kSqlite) {
    ASSERT_TRUE(*reserve);
    EXPECT_NE(reserve->value().find("--min-free-disk-mb"), std::string::npos) << **reserve;
  } else {
    EXPECT_FALSE(*reserve) << "PostgreSQL's disk is not the server's to measure";
  }
  EXPECT_TRUE(commands_->record_heartbeat(heartbeat("web-01")).ok());
}

// Migration 3 moves the arguments that rows of an older schema held into their table, once
// each, and commands read back as they were.
TEST_P(StoreBoundsTest, ArgumentsHeldInRowsAreMovedToTheirTable) {
  store_.reset();
  new_location();
  {
    auto db = open_database();
    ASSERT_TRUE(db);
    ASSERT_EQ(migrate(*db, schema_migrations(GetParam()).first(2)).value(), 2);
    ASSERT_TRUE(db->execute(R"sql(
INSERT INTO profiling_requests (request_id, service_name, request_type, target_hosts, continuous,
                                duration, frequency, profiling_mode, additional_args, status,
                                created_ms)
VALUES ('r1', 'web', 'start', '{"a": null, "b": null}', 0, 60, 11, 'cpu', '{"x": 1}', 'pending',
        1);
INSERT INTO commands (command_id, hostname, service_name, command_type, continuous, duration,
                      frequency, profiling_mode, additional_args, combined_config, status,
                      created_ms)
VALUES ('c1', 'a', 'web', 'start', 0, 60, 11, 'cpu', '{"x": 1}',
        '{"x": 1, "command_type": "start", "continuous": false, "duration": 60,
          "frequency": 11, "profiling_mode": "cpu"}', 'pending', 1),
       ('c2', 'b', 'web', 'start', 0, 60, 11, 'cpu', '{"x": 1}',
        '{"x": 1, "command_type": "start", "continuous": false, "duration": 60,
          "frequency": 11, "profiling_mode": "cpu"}', 'pending', 1);
INSERT INTO command_requests (command_id, request_id) VALUES ('c1', 'r1'), ('c2', 'r1');
)sql")
                    .ok());
  }
  open_store();
  EXPECT_EQ(column("SELECT COUNT(*) FROM additional_args"), "1");
  Command command = store_->get_command("c2").value();
  EXPECT_EQ(command.combined_config, json({{"x", 1},
                                           {"command_type", "start"},
                                           {"continuous", false},
                                           {"duration", 60},
                                           {"frequency", 11},
                                           {"profiling_mode", "cpu"}}));
  EXPECT_EQ(store_->get_request("r1").value().additional_args, json({{"x", 1}}));
  SubmitOutcome merged = submit(start({{"a", std::nullopt}}));
  EXPECT_EQ(merged.hosts[0].action, PlanAction::kMerged);
  EXPECT_EQ(current("a").combined_config["x"], 1);
}

}  // namespace
}  // namespace dormant::server::storage
