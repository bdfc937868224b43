#include "profile/stack_table.h"

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profile/fast_hash.h"

namespace dormant::profile {
namespace {

using Frames = std::vector<std::string_view>;

// Every stack as "container;comm;frame;… count", for comparisons.
std::map<std::string, uint64_t> contents(const StackTable& table) {
  std::map<std::string, uint64_t> stacks;
  table.for_each([&](const StackView& stack) {
    std::string line(stack.container);
    line.append(";").append(stack.comm);
    for (StringId id : stack.frame_ids) line.append(";").append(table.string(id));
    stacks[line] += stack.count;
  });
  return stacks;
}

TEST(StackTable, CountsEqualStacksTogether) {
  StackTable table;
  std::vector<std::string_view> frames = {"main", "work"};
  table.add("", "app", frames, 2);
  table.add("", "app", frames, 3);
  table.add("", "other app", frames, 1);
  EXPECT_EQ(table.total_samples(), 6u);
  EXPECT_EQ(table.distinct_stacks(), 2u);
  EXPECT_EQ(contents(table),
            (std::map<std::string, uint64_t>{{";app;main;work", 5}, {";other app;main;work", 1}}));
}

TEST(StackTable, StackPrefixesAndEmptyStacksAreDistinct) {
  StackTable table;
  std::vector<std::string_view> longer = {"main", "work"};
  std::vector<std::string_view> shorter = {"main"};
  table.add("", "app", longer);
  table.add("", "app", shorter);
  table.add("", "app", {});
  EXPECT_EQ(table.distinct_stacks(), 3u);
  EXPECT_EQ(contents(table)[";app"], 1u);
}

// Thousands of strings of every length force the tables and the string arena to grow many
// times; every id must still name its own text.
TEST(StackTable, InternedStringsSurviveGrowth) {
  StackTable table;
  std::vector<std::string> texts;
  std::vector<StringId> ids;
  for (int i = 0; i < 20000; ++i) {
    texts.push_back(std::string(static_cast<size_t>(i % 97), 'x') + std::to_string(i));
    ids.push_back(table.intern(texts.back()));
  }
  texts.push_back(std::string(300 << 10, 'y'));  // larger than an arena block
  ids.push_back(table.intern(texts.back()));
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(table.string(ids[i]), texts[i]) << i;
    ASSERT_EQ(table.intern(texts[i]), ids[i]) << i;
  }
  EXPECT_EQ(table.intern(""), table.intern(std::string()));
}

TEST(StackTable, MergeAddsCountsAndKeepsNames) {
  StackTable first, second;
  std::vector<std::string_view> a = {"main", "a"};
  std::vector<std::string_view> b = {"main", "b"};
  first.add("db", "postgres", a, 2);
  second.add("db", "postgres", a, 3);
  second.add("", "nginx", b, 4);
  first.merge(second);
  EXPECT_EQ(first.total_samples(), 9u);
  EXPECT_EQ(contents(first),
            (std::map<std::string, uint64_t>{{"db;postgres;main;a", 5}, {";nginx;main;b", 4}}));
}

TEST(StackTable, MergeUnderAContainerNameReplacesTheOneGiven) {
  StackTable per_process, merged;
  std::vector<std::string_view> frames = {"main"};
  per_process.add("", "nginx", frames, 4);
  merged.merge(per_process, "web-1");
  merged.merge(per_process, "");
  EXPECT_EQ(contents(merged),
            (std::map<std::string, uint64_t>{{"web-1;nginx;main", 4}, {";nginx;main", 4}}));
  EXPECT_EQ(merged.containers(), (std::vector<std::string>{"web-1"}));
}

TEST(StackTable, ContainersAreDistinctAndSorted) {
  StackTable table;
  std::vector<std::string_view> frames = {"main"};
  table.add("zeta", "a", frames);
  table.add("", "b", frames);
  table.add("alpha", "c", frames);
  table.add("zeta", "d", frames);
  EXPECT_EQ(table.containers(), (std::vector<std::string>{"alpha", "zeta"}));
}

TEST(StackTable, CopiesAndClearsAreIndependent) {
  StackTable table;
  std::vector<std::string_view> frames = {"main"};
  table.add("", "app", frames, 7);
  StackTable copy = table;
  table.clear();
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(table.total_samples(), 0u);
  EXPECT_EQ(contents(copy), (std::map<std::string, uint64_t>{{";app;main", 7}}));
}

// same_bytes reads words that overlap and never past the end: compared with memcmp on every
// length up to a few words, with the difference at every position.
TEST(StackTable, AddWithinAFullTableAddsOnlyToStacksItHolds) {
  StackTable table;
  EXPECT_TRUE(table.add_within("", "app", Frames{"main", "a"}, 1, 2));
  EXPECT_TRUE(table.add_within("", "app", Frames{"main", "b"}, 1, 2));
  EXPECT_TRUE(table.add_within("", "app", Frames{"main", "a"}, 5, 2)) << "held: still counted";
  EXPECT_FALSE(table.add_within("", "app", Frames{"main", "c"}, 7, 2)) << "a new name";
  EXPECT_FALSE(table.add_within("", "app", Frames{"a", "b"}, 7, 2)) << "known names, new stack";
  EXPECT_FALSE(table.add_within("box", "app", Frames{"main", "a"}, 7, 2)) << "another container";
  EXPECT_EQ(table.distinct_stacks(), 2u);
  EXPECT_EQ(table.total_samples(), 7u);
  EXPECT_EQ(contents(table),
            (std::map<std::string, uint64_t>{{";app;main;a", 6}, {";app;main;b", 1}}));
}

TEST(FastHash, SameBytesAgreesWithMemcmp) {
  std::mt19937 random(7);
  for (size_t size = 0; size <= 70; ++size) {
    std::vector<char> a(size), b(size);
    for (char& c : a) c = static_cast<char>(random());
    b = a;
    ASSERT_TRUE(same_bytes(a.data(), b.data(), size)) << size;
    ASSERT_EQ(fast_hash(a.data(), size), fast_hash(b.data(), size)) << size;
    for (size_t at = 0; at < size; ++at) {
      b[at] ^= 0x01;
      ASSERT_FALSE(same_bytes(a.data(), b.data(), size)) << size << " at " << at;
      ASSERT_NE(fast_hash(a.data(), size), fast_hash(b.data(), size)) << size << " at " << at;
      b[at] = a[at];
    }
  }
}

TEST(FastHash, LengthIsPartOfTheHash) {
  const char zeros[32] = {};
  for (size_t size = 1; size < sizeof(zeros); ++size) {
    EXPECT_NE(fast_hash(zeros, size), fast_hash(zeros, size - 1)) << size;
  }
}

}  // namespace
}  // namespace dormant::profile
