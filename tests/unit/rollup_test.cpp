// Rollups: a bucket's stacks as stored, the buckets a range reads, the labels a filter matches,
// and, on SQLite and PostgreSQL, merges from rollups against merges of the raw profiles.
#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store_test_fixture.h"

#include "profile/collapsed.h"
#include "server/api/profile_merge.h"
#include "server/api/profile_rollup.h"
#include "server/api/rollup_upkeep.h"
#include "server/storage/rollup_blob.h"
#include "server/storage/rollup_plan.h"
#include "server/storage/rollup_rows.h"

namespace dormant::server::storage {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;

constexpr int64_t kMinute = 60'000;
constexpr int64_t kHour = 3'600'000;
constexpr int64_t kDay = 86'400'000;

// ---------------------------------------------------------------------------------------------
// A bucket's stacks as stored

TEST(RollupBlobTest, StacksRoundTripInOrder) {
  std::vector<StackCount> stacks = {
      {0, 3}, {1, 1}, {200, 127}, {201, 128}, {UINT64_MAX, UINT64_MAX}};
  auto decoded = decode_stacks(encode_stacks(stacks));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  EXPECT_EQ(*decoded, stacks);
  EXPECT_TRUE(decode_stacks("").value().empty());
}

TEST(RollupBlobTest, DamagedBytesAreRefusedNotRead) {
  std::string good = encode_stacks(std::vector<StackCount>{{5, 300}, {9, 1}});
  EXPECT_FALSE(decode_stacks(good.substr(0, good.size() - 1)).ok());  // cut inside a count
  EXPECT_FALSE(decode_stacks(good.substr(0, 4)).ok());                // cut inside an id
  std::string unordered = encode_stacks(std::vector<StackCount>{{9, 1}, {5, 300}});
  EXPECT_FALSE(decode_stacks(unordered).ok());
  std::string endless(8, '\1');
  endless += std::string(11, '\xff');  // a count that never ends
  EXPECT_FALSE(decode_stacks(endless).ok());
}

TEST(RollupBlobTest, AddingSumsByIdAndCountsNewStacksPastTheCapAsOne) {
  std::vector<StackCount> held = {{2, 10}, {4, 1}};
  std::vector<StackCount> added = {{1, 5}, {2, 1}, {3, 7}, {9, 2}};
  EXPECT_EQ(add_stacks(held, added, 10),
            (std::vector<StackCount>{{1, 5}, {2, 11}, {3, 7}, {4, 1}, {9, 2}}));
  // Room for one more: the lowest new id takes it, the others go to kStacksPastCap.
  EXPECT_EQ(add_stacks(held, added, 3),
            (std::vector<StackCount>{{kStacksPastCap, 9}, {1, 5}, {2, 11}, {4, 1}}));
  // Stacks already held still add up past the cap.
  auto full = add_stacks(add_stacks(held, added, 3), added, 3);
  EXPECT_EQ(full, (std::vector<StackCount>{{kStacksPastCap, 18}, {1, 10}, {2, 12}, {4, 1}}));
}

// ---------------------------------------------------------------------------------------------
// The buckets a range reads

BucketPlan plan(int64_t from, int64_t to, RollupRetention retention = {}, int64_t now = 0) {
  return plan_buckets(from, to, now == 0 ? 400 * kDay : now, retention);
}

TEST(RollupPlanTest, WholeDaysAndHoursAreReadAsSuchAndTheEndsByMinute) {
  int64_t day = 100 * kDay;
  auto read = plan(day - kHour - 5 * kMinute, day + kDay + 2 * kHour + 3 * kMinute);
  EXPECT_EQ(read.ranges,
            (std::vector<BucketRange>{{Resolution::kMinute, day - kHour - 5 * kMinute, day - kHour},
                                      {Resolution::kHour, day - kHour, day},
                                      {Resolution::kDay, day, day + kDay},
                                      {Resolution::kHour, day + kDay, day + kDay + 2 * kHour},
                                      {Resolution::kMinute, day + kDay + 2 * kHour,
                                       day + kDay + 2 * kHour + 3 * kMinute}}));
  EXPECT_EQ(read.from_ms, day - kHour - 5 * kMinute);
}

TEST(RollupPlanTest, ARangeIsReadInTheWholeMinutesItTouches) {
  int64_t at = 100 * kDay + 7 * kMinute;
  auto read = plan(at + 1500, at + 2 * kMinute + 1);
  EXPECT_EQ(read.ranges, (std::vector<BucketRange>{{Resolution::kMinute, at, at + 3 * kMinute}}));
  EXPECT_EQ(read.from_ms, at);
  EXPECT_EQ(read.to_ms, at + 3 * kMinute);
  EXPECT_TRUE(plan(at, at).ranges.empty());
  EXPECT_TRUE(plan(at, at - kMinute).ranges.empty());
}

TEST(RollupPlanTest, WhereMinutesAreGoneTheHourIsReadWholeAndTheRangeSaysSo) {
  int64_t now = 400 * kDay;
  RollupRetention retention{hours(24), hours(24 * 7), hours(0)};
  // Two days ago, 10:20 to 12:40: minutes are gone, hours are kept.
  int64_t from = now - 2 * kDay + 10 * kHour + 20 * kMinute;
  auto read = plan(from, from + 2 * kHour + 20 * kMinute, retention, now);
  EXPECT_EQ(read.ranges, (std::vector<BucketRange>{{Resolution::kHour, from - 20 * kMinute,
                                                    from + 3 * kHour - 20 * kMinute}}));
  EXPECT_EQ(read.from_ms, from - 20 * kMinute);
  EXPECT_EQ(read.to_ms, from + 3 * kHour - 20 * kMinute);
  // Ten days ago only days are kept; a range from then to now reads that day whole, the whole
  // days after it, then the hours and minutes of the last.
  auto long_read = plan(now - 10 * kDay + kHour, now - 5 * kMinute, retention, now);
  EXPECT_EQ(long_read.ranges.front(), (BucketRange{Resolution::kDay, now - 10 * kDay, now - kDay}));
  EXPECT_EQ(long_read.ranges[1], (BucketRange{Resolution::kHour, now - kDay, now - kHour}));
  EXPECT_EQ(long_read.ranges.back().resolution, Resolution::kMinute);
  EXPECT_EQ(long_read.to_ms, now - 5 * kMinute);
  // Past every retention nothing is read, and the loop does not walk the years minute by minute.
  RollupRetention short_lived{hours(1), hours(2), hours(24)};
  auto gone = plan(0, now - 2 * kDay, short_lived, now);
  EXPECT_TRUE(gone.ranges.empty());
  EXPECT_EQ(gone.from_ms, gone.to_ms);
}

// ---------------------------------------------------------------------------------------------
// Labels and filters

TEST(LabelFilterTest, DeploymentsAreNamedAsStudioNamesThem) {
  EXPECT_EQ(container_env_name("shop/web-7d9f8b6c5-x2x9k/app"), "web_shop");
  EXPECT_EQ(container_env_name("k8s_app_web-7d9f8b6c5-x2x9k_shop_0f1e_3"), "web_shop");
  EXPECT_EQ(container_env_name("app_web-7d9f8b6c5-x2x9k_shop"), "web_shop");
  EXPECT_EQ(container_env_name("app_db-0_shop"), "db-0_shop");  // a StatefulSet's pod
  EXPECT_EQ(container_env_name("happy_einstein"), "happy_einstein");
  EXPECT_EQ(container_env_name(""), "");
}

TEST(LabelFilterTest, PodsAndNamespacesAreReadFromTheContainersName) {
  for (const char* container :
       {"shop/web-7d9f8b6c5-x2x9k/app", "k8s_app_web-7d9f8b6c5-x2x9k_shop_0f1e_3",
        "app_web-7d9f8b6c5-x2x9k_shop"}) {
    LabelKey key{"web-01", container, ""};
    EXPECT_EQ(label_value(key, Label::kPodName), "web-7d9f8b6c5-x2x9k") << container;
    EXPECT_EQ(label_value(key, Label::kNamespace), "shop") << container;
    EXPECT_TRUE((LabelFilter{
        false, {{Label::kNamespace, true, "shop"}, {Label::kPodName, true, "web-7d9f8b6c5-x2x9k"}}}
                     .matches(key)));
    EXPECT_FALSE(
        (LabelFilter{false, {{Label::kNamespace, true, "web-7d9f8b6c5-x2x9k"}}}.matches(key)));
  }
  for (const char* container : {"happy_einstein", "", "a/b", "k8s_app_pod_ns"}) {
    LabelKey key{"web-01", container, ""};
    EXPECT_EQ(label_value(key, Label::kPodName), "") << container;
    EXPECT_EQ(label_value(key, Label::kNamespace), "") << container;
    EXPECT_FALSE((LabelFilter{false, {{Label::kPodName, false, ""}}}.matches(key)))
        << "outside Kubernetes, a container's pod is empty: " << container;
  }
}

TEST(LabelFilterTest, AllOrAnyRuleMustHold) {
  LabelKey key{"web-01", "shop/web-7d9f8b6c5-x2x9k/app", "m5.xlarge"};
  LabelFilter all{false,
                  {{Label::kHostName, true, "web-01"}, {Label::kInstanceType, false, "c5.large"}}};
  EXPECT_TRUE(all.matches(key));
  EXPECT_EQ(all.required_host(), "web-01");
  all.rules.push_back({Label::kContainerEnvName, true, "db_shop"});
  EXPECT_FALSE(all.matches(key));
  LabelFilter any{
      true, {{Label::kHostName, true, "web-02"}, {Label::kContainerEnvName, true, "web_shop"}}};
  EXPECT_TRUE(any.matches(key));
  EXPECT_EQ(any.required_host(), std::nullopt);
  EXPECT_TRUE(LabelFilter{}.matches(key));
}

// A profile of a host with thousands of containers (or an agent that says so) costs at most
// kMaxRollupParts parts, three bucket writes each; no sample is lost.
TEST(ProfileRollupTest, ContainersPastTheCapShareOnePart) {
  std::string text = "# {\"metadata\": {\"cloud_info\": {\"instance_type\": \"zones/x/" +
                     std::string(1000, 'm') + "\"}}}\n";
  for (int i = 0; i < 3000; ++i) text += "0;c" + std::to_string(10000 + i) + ";app;main 2\n";
  text += "0;;app;main 1\n";
  auto parsed = profile::read_collapsed(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(api::instance_type_of(parsed->header), std::string(256, 'm'));
  ProfileRollup rollup = api::rollup_of(*parsed, "web-01", "");
  ASSERT_EQ(rollup.parts.size(), api::kMaxRollupParts + 1);
  uint64_t samples = 0;
  for (const RollupPart& part : rollup.parts) {
    for (const StackCount& stack : part.stacks) samples += stack.count;
  }
  EXPECT_EQ(samples, 6001u);
  auto past = std::find_if(rollup.parts.begin(), rollup.parts.end(), [](const RollupPart& part) {
    return part.key.container == api::kContainersPastCap;
  });
  ASSERT_NE(past, rollup.parts.end());
  EXPECT_EQ(past->stacks, (std::vector<StackCount>{{rollup.whole[0].id, 2 * (3000 - 1023)}}));
  EXPECT_EQ(rollup.whole.size(), 1u) << "one stack text, in every container";
  EXPECT_EQ(rollup.whole[0].count, 6001u);
}

// ---------------------------------------------------------------------------------------------
// Merges from rollups, against merges of the raw profiles

struct SentStack {
  std::string container;
  std::string stack;  // "comm;frame;…"
  uint64_t count;
};

struct SentProfile {
  std::string hostname;
  std::string instance_type;
  int64_t start_ms;
  std::vector<SentStack> stacks;
};

class RollupStoreTest : public StoreTest {
 protected:
  void SetUp() override {
    options_.rollup_retention = retention_;
    StoreTest::SetUp();
  }

  // Stores a profile as an upload does, its rollup included.
  void send(const SentProfile& sent) {
    std::string text = "# {\"metadata\": {\"cloud_info\": {\"instance_type\": \"" +
                       sent.instance_type + "\"}, \"run_arguments\": {\"frequency\": 11}}}\n";
    for (const SentStack& stack : sent.stacks) {
      text += "0;" + stack.container + ";" + stack.stack + " " + std::to_string(stack.count) + "\n";
    }
    auto parsed = profile::read_collapsed(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    ProfileUpload upload;
    upload.service_name = "web";
    upload.hostname = sent.hostname;
    upload.start_time = from_unix_ms(sent.start_ms);
    upload.end_time = from_unix_ms(sent.start_ms + 60'000);
    upload.collapsed = text;
    upload.instance_type = api::instance_type_of(parsed->header);
    upload.rollup = api::rollup_of(*parsed, upload.hostname, upload.instance_type);
    auto stored = store_->store_profile(upload);
    ASSERT_TRUE(stored.ok()) << stored.error().message();
    sent_.push_back(sent);
  }

  // The merge of the raw profiles whose start is in [from, to) and whose stacks' labels match.
  std::string raw_merge(int64_t from, int64_t to, const std::optional<LabelFilter>& filter,
                        bool keep_idle) {
    profile::StackTable table;
    for (const SentProfile& sent : sent_) {
      if (sent.start_ms < from || sent.start_ms >= to) continue;
      for (const SentStack& stack : sent.stacks) {
        if (filter && !filter->matches({sent.hostname, stack.container, sent.instance_type})) {
          continue;
        }
        std::vector<std::string> parts;
        std::string_view rest = stack.stack;
        for (size_t at; (at = rest.find(';')) != std::string_view::npos;
             rest.remove_prefix(at + 1)) {
          parts.emplace_back(rest.substr(0, at));
        }
        parts.emplace_back(rest);
        if (!keep_idle && parts[0].starts_with("swapper")) continue;
        std::vector<std::string_view> frames(parts.begin() + 1, parts.end());
        table.add("", parts[0], frames, stack.count);
      }
    }
    return profile::write_collapsed(table, {});
  }

  // What a merge of "web" over [from_ms, to_ms) takes.
  static api::MergeSelection web_from(int64_t from_ms, int64_t to_ms) {
    api::MergeSelection selection;
    selection.service = "web";
    selection.since = from_unix_ms(from_ms);
    selection.until = from_unix_ms(to_ms);
    return selection;
  }

  RollupRetention retention_;
  std::vector<SentProfile> sent_;
};

INSTANTIATE_TEST_SUITE_P(Stores, RollupStoreTest,
                         ::testing::Values(Dialect::kSqlite, Dialect::kPostgres), store_name);

// Profiles over three days from five hosts, in containers of three kinds and none, with idle
// stacks; random ranges (to the millisecond) and random filters of every label and operator.
TEST_P(RollupStoreTest, MergesFromRollupsEqualMergesOfTheRawProfiles) {
  std::mt19937 random(42);
  auto pick = [&](const auto& choices) { return choices[random() % choices.size()]; };
  const std::vector<std::string> hosts = {"web-01", "web-02", "web-03", "db-01", "batch-01"};
  const std::vector<std::string> containers = {"", "shop/web-7d9f8b6c5-x2x9k/app",
                                               "shop/db-0/postgres", "happy_einstein"};
  const std::vector<std::string> stacks = {"python;main;handle;parse",
                                           "python;main;handle;render",
                                           "python;main;idle_wait",
                                           "java;Thread.run_[j];Checkout.total_[j]",
                                           "java;Thread.run_[j];Cart.add_[i]",
                                           "swapper/0;do_idle_[k]",
                                           "node;LazyCompile:*tick;uv_run"};
  int64_t now = to_unix_ms(now_);
  for (int i = 0; i < 120; ++i) {
    // Hours and days over are compacted from minutes two thirds of the way: the rest come late,
    // into compacted buckets as well as their minutes.
    if (i == 80) {
      auto compacted = store_->compact_rollups();
      ASSERT_TRUE(compacted.ok()) << compacted.error().message();
      EXPECT_GT(*compacted, 10);
      EXPECT_EQ(*store_->compact_rollups(), 0);  // none is due again
    }
    SentProfile sent;
    sent.hostname = pick(hosts);
    sent.instance_type = sent.hostname.starts_with("web") ? "m5.xlarge" : "c5.large";
    sent.start_ms = now - static_cast<int64_t>(random() % (3 * kDay)) - 61'000;
    std::set<std::pair<std::string, std::string>> seen;
    for (int s = 0; s < 8; ++s) {
      SentStack stack{pick(containers), pick(stacks), 1 + random() % 50};
      if (seen.emplace(stack.container, stack.stack).second) sent.stacks.push_back(stack);
    }
    ASSERT_NO_FATAL_FAILURE(send(sent));
  }
  const std::vector<Label> labels = {Label::kHostName,         Label::kContainerName,
                                     Label::kContainerEnvName, Label::kInstanceType,
                                     Label::kPodName,          Label::kNamespace};
  auto rule_value = [&](Label label) -> std::string {
    switch (label) {
      case Label::kHostName:
        return pick(hosts);
      case Label::kContainerName:
        return pick(containers);
      case Label::kContainerEnvName:
        return container_env_name(pick(containers));
      case Label::kInstanceType:
        return random() % 2 ? "m5.xlarge" : "c5.large";
      case Label::kPodName:
      case Label::kNamespace:
        return label_value(LabelKey{"", pick(containers), ""}, label);
    }
    return "";
  };
  for (int round = 0; round < 60; ++round) {
    int64_t from = now - static_cast<int64_t>(random() % (3 * kDay + kHour));
    int64_t length = 1 + static_cast<int64_t>(random() % (2 * kDay));
    api::MergeSelection selection = web_from(from, from + length);
    selection.keep_idle = round % 3 == 0;
    if (round % 4 != 0) {
      LabelFilter filter;
      filter.any = random() % 3 == 0;
      for (int r = 1 + static_cast<int>(random() % 3); r > 0; --r) {
        Label label = pick(labels);
        filter.rules.push_back({label, random() % 4 != 0, rule_value(label)});
      }
      selection.filter = filter;
    }
    auto merged = api::merge_rollups(*store_, selection);
    ASSERT_TRUE(merged.ok()) << merged.error().message();
    ASSERT_TRUE(merged->range_start && merged->range_end);
    EXPECT_EQ(to_unix_ms(*merged->range_start), bucket_start(from, Resolution::kMinute));
    int64_t read_to = to_unix_ms(*merged->range_end);
    EXPECT_GE(read_to, from + length);
    EXPECT_LT(read_to, from + length + kMinute);
    EXPECT_EQ(
        profile::write_collapsed(merged->stacks, {}),
        raw_merge(to_unix_ms(*merged->range_start), read_to, selection.filter, selection.keep_idle))
        << "round " << round;
    if (!selection.filter) {
      int64_t profiles = std::count_if(sent_.begin(), sent_.end(), [&](const SentProfile& sent) {
        return sent.start_ms >= to_unix_ms(*merged->range_start) && sent.start_ms < read_to;
      });
      EXPECT_EQ(merged->profiles, profiles) << "round " << round;
    }
  }
}

// Minutes kept a day and hours three: an older range is read by whole hours, then days, and the
// merge equals the raw profiles of the range it says it read.
TEST_P(RollupStoreTest, PastTheirRetentionFinerBucketsGiveWayToCoarserOnes) {
  retention_ = {hours(24), hours(72), hours(0)};
  options_.rollup_retention = retention_;
  reopen();
  int64_t now = to_unix_ms(now_);
  std::mt19937 random(7);
  for (int i = 0; i < 60; ++i) {
    SentProfile sent{"web-01",
                     "m5.xlarge",
                     now - static_cast<int64_t>(random() % (5 * kDay)) - 61'000,
                     {{"", "python;main;step_" + std::to_string(i % 9), 1 + random() % 9}}};
    ASSERT_NO_FATAL_FAILURE(send(sent));
  }
  auto compacted = store_->compact_rollups();
  ASSERT_TRUE(compacted.ok()) << compacted.error().message();
  EXPECT_GT(*compacted, 0);
  auto expired = store_->expire_rollups(100000);
  ASSERT_TRUE(expired.ok()) << expired.error().message();
  EXPECT_GT(*expired, 0);
  for (int64_t from : {now - 2 * kDay + 17 * kMinute, now - 4 * kDay - 5 * kHour - 3 * kMinute}) {
    api::MergeSelection selection = web_from(from, from + 30 * kHour + 7 * kMinute);
    auto merged = api::merge_rollups(*store_, selection);
    ASSERT_TRUE(merged.ok()) << merged.error().message();
    int64_t read_from = to_unix_ms(*merged->range_start);
    int64_t read_to = to_unix_ms(*merged->range_end);
    EXPECT_LT(read_from, bucket_start(from, Resolution::kMinute));  // widened
    EXPECT_EQ(profile::write_collapsed(merged->stacks, {}),
              raw_merge(read_from, read_to, std::nullopt, false));
  }
}

TEST_P(RollupStoreTest, ABucketKeepsItsCapOfStacksAndCountsTheRestAsOne) {
  options_.rollup_max_stacks = 3;
  reopen();
  int64_t start = bucket_start(to_unix_ms(now_), Resolution::kMinute) - 10 * kMinute;
  SentProfile sent{"web-01", "", start, {}};
  for (int i = 0; i < 10; ++i) sent.stacks.push_back({"", "python;f" + std::to_string(i), 10});
  ASSERT_NO_FATAL_FAILURE(send(sent));
  ASSERT_NO_FATAL_FAILURE(send(sent));
  api::MergeSelection selection = web_from(start, start + kMinute);
  auto merged = api::merge_rollups(*store_, selection);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->stacks.total_samples(), 200u);
  EXPECT_EQ(merged->samples_beyond_limit, 140u);
  EXPECT_EQ(merged->stacks.distinct_stacks(), 4u);
  auto db = open_database();
  auto sizes = db->prepare("SELECT MAX(LENGTH(stacks)) FROM service_rollups");
  ASSERT_TRUE(sizes.ok() && sizes->step().value());
  EXPECT_LE(sizes->int64(0), 4 * 10);  // three stacks and the one past the cap
}

// Two servers on one PostgreSQL database (or two threads on SQLite) add to the same buckets at
// once: every sample is counted, none twice.
TEST_P(RollupStoreTest, ConcurrentUploadsOfOneServiceLoseNoSamples) {
  std::unique_ptr<Store> second;  // one store per data directory on SQLite
  if (GetParam() == Dialect::kPostgres) {
    auto opened = open_another();
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    second = std::move(*opened);
  }
  Store& other = second ? *second : *store_;
  int64_t start = bucket_start(to_unix_ms(now_), Resolution::kMinute) - 5 * kMinute;
  auto upload_from = [&](Store& store, int stacks) {
    for (int i = 0; i < 15; ++i) {
      std::string text = "# {}\n0;;python;f" + std::to_string(i % stacks) + " 3\n";
      auto parsed = profile::read_collapsed(text);
      ProfileUpload upload;
      upload.service_name = "web";
      upload.hostname = "web-0" + std::to_string(stacks);
      upload.start_time = from_unix_ms(start + i * 1000);
      upload.end_time = upload.start_time + seconds(1);
      upload.collapsed = text;
      upload.rollup = api::rollup_of(*parsed, upload.hostname, "");
      auto stored = store.store_profile(upload);
      EXPECT_TRUE(stored.ok()) << stored.error().message();
    }
  };
  std::thread one([&] { upload_from(*store_, 4); });
  std::thread two([&] { upload_from(other, 5); });
  one.join();
  two.join();
  api::MergeSelection selection = web_from(start, start + kMinute);
  auto merged = api::merge_rollups(*store_, selection);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->stacks.total_samples(), 2u * 15 * 3);
  EXPECT_EQ(merged->profiles, 30);
  EXPECT_EQ(merged->hosts, (std::set<std::string>{"web-04", "web-05"}));
}

// A bucket damaged on disk is not read as data, and the uploads of its time go on.
TEST_P(RollupStoreTest, ADamagedBucketFailsItsReadsButNotTheUploadsAfterIt) {
  int64_t start = bucket_start(to_unix_ms(now_), Resolution::kMinute) - 3 * kMinute;
  SentProfile sent{"web-01", "", start, {{"", "python;main", 5}}};
  ASSERT_NO_FATAL_FAILURE(send(sent));
  auto db = open_database();
  auto damage = db->prepare("UPDATE service_rollups SET stacks = ?1 WHERE resolution_s = 60");
  ASSERT_TRUE(damage.ok());
  ASSERT_TRUE(damage->bind_blob(1, std::string("\x01\x02\x03", 3)).run().ok());
  api::MergeSelection selection = web_from(start, start + kMinute);
  auto merged = api::merge_rollups(*store_, selection);
  ASSERT_FALSE(merged.ok());
  EXPECT_NE(merged.error().message().find("rollup"), std::string::npos) << merged.error().message();
  ASSERT_NO_FATAL_FAILURE(send(sent));
  merged = api::merge_rollups(*store_, selection);
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->stacks.total_samples(), 5u);  // what it held is gone; the new profile is in
}

// A server upgraded from a schema without rollups has profiles they lack: they are added once,
// the same as if they had come after; one whose text is gone is marked done with nothing.
TEST_P(RollupStoreTest, ProfilesStoredBeforeRollupsAreAddedToThemOnce) {
  int64_t start = bucket_start(to_unix_ms(now_), Resolution::kMinute) - 30 * kMinute;
  for (int i = 0; i < 70; ++i) {  // more than a batch
    SentProfile sent{"web-0" + std::to_string(i % 3),
                     "m5.xlarge",
                     start + i * 1000,
                     {{"", "python;main;f" + std::to_string(i % 5), 2},
                      {"shop/web-7d9f8b6c5-x2x9k/app", "java;run", 1}}};
    ASSERT_NO_FATAL_FAILURE(send(sent));
  }
  api::MergeSelection selection = web_from(start, start + 5 * kMinute);
  auto before = api::merge_rollups(*store_, selection);
  ASSERT_TRUE(before.ok()) << before.error().message();
  // As an older schema left them: in no rollup, no instance type; and one profile's text gone.
  auto db = open_database();
  ASSERT_TRUE(db->execute("UPDATE profiles SET rolled_up = 0, instance_type = ''; "
                          "DELETE FROM service_rollups; DELETE FROM label_rollups; "
                          "DELETE FROM rollup_stacks")
                  .ok());
  auto gone = store_->list_profiles({std::nullopt, std::nullopt, std::nullopt, std::nullopt, 1});
  ASSERT_TRUE(gone.ok() && gone->size() == 1);
  if (GetParam() == Dialect::kSqlite) {
    std::string file =
        column("SELECT file_name FROM profiles WHERE gpid = " + std::to_string(gone->front().gpid));
    ASSERT_TRUE(fs::remove(dir_ / "data" / "profiles" / file)) << file;
  } else {
    ASSERT_TRUE(
        db->execute("DELETE FROM profile_bodies WHERE gpid = " + std::to_string(gone->front().gpid))
            .ok());
  }
  EXPECT_EQ(api::merge_rollups(*store_, selection).value().stacks.total_samples(), 0u);

  auto added = api::roll_up_stored_profiles(*store_);
  ASSERT_TRUE(added.ok()) << added.error().message();
  EXPECT_EQ(*added, 70);
  EXPECT_EQ(api::roll_up_stored_profiles(*store_).value(), 0) << "once";
  EXPECT_EQ(column("SELECT COUNT(*) FROM profiles WHERE instance_type = 'm5.xlarge'"), "69");
  auto after = api::merge_rollups(*store_, selection);
  ASSERT_TRUE(after.ok()) << after.error().message();
  const SentProfile& last = sent_.back();
  uint64_t lost = 0;
  for (const SentStack& stack : last.stacks) lost += stack.count;
  EXPECT_EQ(after->stacks.total_samples() + lost, before->stacks.total_samples());
  EXPECT_EQ(after->profiles, 69);
}

// The series of Performance Studio's service view (samples per slot) and its table view (a
// function's share per slot) read slots of buckets: each slot's samples are those of the raw
// profiles that start in it, filtered as the buckets are.
TEST_P(RollupStoreTest, SlotsOfARangeHoldTheSamplesOfTheProfilesThatStartInThem) {
  std::mt19937 random(7);
  const std::vector<std::string> hosts = {"web-01", "web-02", "db-01"};
  int64_t now = to_unix_ms(now_);
  for (int i = 0; i < 60; ++i) {
    SentProfile sent;
    sent.hostname = hosts[random() % hosts.size()];
    sent.instance_type = "m5.xlarge";
    sent.start_ms = now - static_cast<int64_t>(random() % (2 * kDay)) - 61'000;
    sent.stacks = {{"", "python;main;work", 1 + random() % 50},
                   {"happy_einstein", "python;main;wait", 1 + random() % 50}};
    ASSERT_NO_FATAL_FAILURE(send(sent));
  }
  for (int64_t slot : {15 * kMinute, 2 * kHour, kDay}) {
    for (bool filtered : {false, true}) {
      RollupQuery query;
      query.service = "web";
      query.from = from_unix_ms(now - 2 * kDay - kHour);
      query.to = from_unix_ms(now);
      if (filtered) {
        query.filter = LabelFilter{false, {{Label::kHostName, true, "web-02"}}};
      }
      StackClasses classes = {{api::stack_id("python;main;work"), StackClass::kPicked},
                              {api::stack_id("python;main;wait"), StackClass::kLeftOut}};
      auto slots = store_->read_rollup_slots(query, slot, &classes);
      ASSERT_TRUE(slots.ok()) << slots.error().message();
      std::map<int64_t, std::array<int64_t, 3>> expected;  // samples, picked, left out
      for (const SentProfile& sent : sent_) {
        if (filtered && sent.hostname != "web-02") continue;
        auto& sums = expected[sent.start_ms - sent.start_ms % slot];
        for (const SentStack& stack : sent.stacks) {
          sums[0] += static_cast<int64_t>(stack.count);
          sums[stack.stack.ends_with("work") ? 1 : 2] += static_cast<int64_t>(stack.count);
        }
      }
      std::map<int64_t, std::array<int64_t, 3>> read;
      for (const RollupSlot& each : *slots) {
        read[each.slot_ms] = {each.samples, static_cast<int64_t>(each.picked),
                              static_cast<int64_t>(each.left_out)};
      }
      EXPECT_EQ(read, expected) << "slot " << slot << (filtered ? ", filtered" : "");
    }
  }
}

// Compaction leaves out a minute it cannot read, says so, and goes on: one damaged bucket holds up
// neither its hour nor the other services.
TEST_P(RollupStoreTest, CompactionLeavesOutADamagedMinuteAndGoesOn) {
  int64_t hour = bucket_start(to_unix_ms(now_), Resolution::kHour) - 2 * kHour;
  ASSERT_NO_FATAL_FAILURE(send({"web-01", "", hour, {{"", "python;main;lost", 5}}}));
  ASSERT_NO_FATAL_FAILURE(send({"web-01", "", hour + kMinute, {{"", "python;main;kept", 7}}}));
  auto db = open_database();
  auto damage = db->prepare(
      "UPDATE service_rollups SET stacks = ?1 WHERE resolution_s = 60 AND bucket_ms = ?2");
  ASSERT_TRUE(damage.ok());
  ASSERT_TRUE(damage->bind_blob(1, std::string("\x01\x02\x03", 3)).bind(2, hour).run().ok());
  auto compacted = store_->compact_rollups();
  ASSERT_TRUE(compacted.ok()) << compacted.error().message();
  EXPECT_GT(*compacted, 0);
  auto merged = api::merge_rollups(*store_, web_from(hour, hour + kHour));
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->buckets, 1);  // the hour, compacted
  EXPECT_EQ(profile::write_collapsed(merged->stacks, {}), "# null\n0;;python;main;kept 7\n");
}

// A database from before compaction (migration 8) had every upload added to its hours and days:
// they are whole up to the hour and the day it is upgraded in, and compacted from there on.
TEST_P(RollupStoreTest, AnUpgradedDatabasesRollupsAreWholeUpToTheHourItIsUpgradedIn) {
  ASSERT_NO_FATAL_FAILURE(
      send({"web-01", "", to_unix_ms(now_) - kDay, {{"", "python;main;work", 5}}}));
  auto db = open_database();
  ASSERT_TRUE(db->execute("DELETE FROM rollup_compactions").ok());
  int64_t before = to_unix_ms(std::chrono::system_clock::now());
  ASSERT_TRUE(mark_rollups_compacted(*db).ok());
  int64_t after = to_unix_ms(std::chrono::system_clock::now());
  auto compacted = read_compacted(*db, "web");
  ASSERT_TRUE(compacted.ok()) << compacted.error().message();
  EXPECT_GE(compacted->hours_before_ms, bucket_start(before, Resolution::kHour));
  EXPECT_LE(compacted->hours_before_ms, bucket_start(after, Resolution::kHour));
  EXPECT_EQ(compacted->days_before_ms, bucket_start(compacted->hours_before_ms, Resolution::kDay));
  EXPECT_EQ(read_compacted(*db, "other").value().hours_before_ms, INT64_MIN);
}

class StudioStateTest : public StoreTest {
 protected:
  void SetUp() override {
    options_.max_saved_filters_per_service = 3;
    options_.max_saved_filters = 5;
    options_.max_snapshots = 2;
    StoreTest::SetUp();
  }
};

INSTANTIATE_TEST_SUITE_P(Stores, StudioStateTest,
                         ::testing::Values(Dialect::kSqlite, Dialect::kPostgres), store_name);

// What a UI's users save is kept until they delete it: past the caps a save is refused, and
// nothing saved before is dropped to make room.
TEST_P(StudioStateTest, SavedFiltersAndSnapshotsAreBoundedAndNeverDroppedForRoom) {
  const std::string rules = R"({"$and":[{"HostName":{"$eq":"web-01"}}]})";
  std::vector<int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = store_->save_filter({0, "shop", rules});
    ASSERT_TRUE(id.ok()) << id.error().message();
    ids.push_back(*id);
  }
  auto refused = store_->save_filter({0, "shop", rules});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_TRUE(store_->save_filter({0, "other", rules}).ok());  // per service
  EXPECT_TRUE(store_->save_filter({0, "third", rules}).ok());
  EXPECT_FALSE(store_->save_filter({0, "fourth", rules}).ok());  // and in all: any name counts
  EXPECT_EQ(store_->saved_filters("shop")->size(), 3u);
  ASSERT_TRUE(*store_->delete_filter(ids[0]));
  EXPECT_TRUE(store_->save_filter({0, "shop", rules}).ok());
  EXPECT_FALSE(*store_->replace_filter(ids[0], rules));  // gone

  Snapshot snapshot{0, "shop", 1000, 2000, R"([{"level":1,"start":0,"duration":5}])", rules};
  auto first = store_->save_snapshot(snapshot);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(store_->save_snapshot(snapshot).ok());
  auto third = store_->save_snapshot(snapshot);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().kind(), ErrorKind::kInvalidArgument);
  auto kept = store_->find_snapshot(*first);
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->frames, snapshot.frames);
  EXPECT_EQ((*kept)->filter, snapshot.filter);
  EXPECT_EQ(*store_->find_snapshot(*first + 100), std::nullopt);
}

// Each upload's figures, summed per host and slot: what the metrics bar and graphs are made of.
TEST_P(StudioStateTest, UploadMetricsSumEachHostsUploadsPerSlot) {
  auto sent = [&](std::string host, int64_t start_ms, std::optional<double> cpu, int64_t cores) {
    ProfileUpload upload = plain_upload("shop", std::move(host), from_unix_ms(start_ms),
                                        from_unix_ms(start_ms + 60'000), "# {}\n");
    upload.cpu_avg = cpu;
    upload.mem_avg = 40;
    upload.processors = cores;
    upload.instance_type = "m5.large";
    ASSERT_TRUE(store_->store_profile(upload).ok());
  };
  const int64_t hour = 3'600'000;
  sent("web-01", 10 * hour, 10, 4);
  sent("web-01", 10 * hour + 120'000, 30, 8);
  sent("web-01", 10 * hour + 900'000, std::nullopt, 8);  // the next slot; no CPU figure
  sent("web-02", 10 * hour + 60'000, 50, 2);
  auto rows = store_->upload_metrics({"shop", 10 * hour, 11 * hour, 900'000});
  ASSERT_TRUE(rows.ok()) << rows.error().message();
  ASSERT_EQ(rows->size(), 3u);
  const HostSlotMetrics& first = (*rows)[0];
  EXPECT_EQ(first.slot_ms, 10 * hour);
  EXPECT_EQ(first.hostname, "web-01");
  EXPECT_EQ(first.instance_type, "m5.large");
  EXPECT_EQ(first.uploads, 2);
  EXPECT_EQ(first.cpu_values, 2);
  EXPECT_DOUBLE_EQ(first.cpu_sum, 40);
  EXPECT_DOUBLE_EQ(first.cpu_max, 30);
  EXPECT_DOUBLE_EQ(first.memory_max, 40);
  EXPECT_EQ(first.profiled_ms, 120'000);
  EXPECT_EQ(first.processors, 8);
  EXPECT_EQ(first.first_start_ms, 10 * hour);
  EXPECT_EQ(first.last_end_ms, 10 * hour + 180'000);
  EXPECT_EQ((*rows)[1].hostname, "web-02");
  EXPECT_EQ((*rows)[2].slot_ms, 10 * hour + 900'000);
  EXPECT_EQ((*rows)[2].cpu_values, 0);
  EXPECT_EQ((*rows)[2].memory_values, 1);
}

}  // namespace
}  // namespace dormant::server::storage
