// Hash flooding of the frame-name table: names crafted so that the hash of fixed keys gives them
// all one slot would make interning a profile's names quadratic. The hash is keyed per process.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/subprocess.h"
#include "profile/fast_hash.h"
#include "profile/stack_table.h"

namespace dormant::profile {
namespace {

// 16 bytes each, the first eight those of the hash's first key: with fixed keys that word becomes
// 0, and so does the product it is multiplied into, whatever the other eight bytes are.
std::vector<std::string> crafted_names(size_t n) {
  const uint64_t first_key = fast_hash_detail::kFirstKey;
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    std::string name(16, '0');
    std::memcpy(name.data(), &first_key, sizeof(first_key));
    std::string digits = std::to_string(i);
    name.replace(16 - digits.size(), digits.size(), digits);
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::string> random_names(size_t n) {
  std::mt19937_64 random(22);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    std::string name(16, '0');
    for (char& c : name) c = static_cast<char>('a' + random() % 26);
    names.push_back(std::move(name));
  }
  return names;
}

// The quickest of three runs, in seconds.
double seconds_to_intern(const std::vector<std::string>& names) {
  double quickest = 1e9;
  for (int run = 0; run < 3; ++run) {
    auto start = std::chrono::steady_clock::now();
    StackTable table;
    for (const std::string& name : names) table.intern(name);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(table.intern("one more"), names.size());
    quickest = std::min(quickest, took.count());
  }
  return quickest;
}

TEST(FrameHashFlooding, CraftedNamesCollideUnderFixedKeysButNotUnderThisProcesssSeed) {
  const std::vector<std::string> names = crafted_names(1000);
  std::set<uint64_t> fixed, seeded;
  for (const std::string& name : names) {
    fixed.insert(fast_hash(name.data(), name.size(), 0));
    seeded.insert(fast_hash(name));
  }
  EXPECT_EQ(fixed.size(), 1u) << "the attack's names no longer collide under fixed keys";
  EXPECT_EQ(seeded.size(), names.size());
  EXPECT_NE(process_hash_seed(), 0u);
}

TEST(FrameHashFlooding, TwoProcessesHashTheSameNameDifferently) {
  auto hash_in_a_process = [] {
    auto run = run_command({FRAME_HASH_OF, "std::vector<int>::push_back"},
                           deadline_after(std::chrono::seconds(30)));
    EXPECT_TRUE(run.ok()) << run.error().message();
    return run.ok() ? run->stdout_text : "";
  };
  const std::string first = hash_in_a_process();
  const std::string second = hash_in_a_process();
  ASSERT_EQ(first.size(), 17u) << first;
  EXPECT_NE(first, second);
}

// Before the seed, 50,000 crafted names took 190 times as long as random ones (5.7 s).
TEST(FrameHashFlooding, AFloodOfCraftedNamesInternsAboutAsFastAsRandomNames) {
  constexpr size_t kNames = 50000;
  const double random = seconds_to_intern(random_names(kNames));
  const double crafted = seconds_to_intern(crafted_names(kNames));
  EXPECT_LT(crafted, 4 * random) << "random " << random << " s, crafted " << crafted << " s";
}

}  // namespace
}  // namespace dormant::profile
