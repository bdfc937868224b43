#include "common/text.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace dormant {
namespace {

TEST(Trim, RemovesAsciiWhitespaceAtBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim(" \t\r\n"), "");
  EXPECT_EQ(trim("\xa0x\xa0"), "\xa0x\xa0");  // not ASCII whitespace
  EXPECT_EQ(trim_front("  a  "), "a  ");
  EXPECT_EQ(trim_back("  a  "), "  a");
}

TEST(Split, KeepsEmptyParts) {
  using Parts = std::vector<std::string_view>;
  EXPECT_EQ(split("a,,b", ','), (Parts{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (Parts{""}));
  EXPECT_EQ(split("a,", ','), (Parts{"a", ""}));
  EXPECT_EQ(split("abc", ','), (Parts{"abc"}));
}

TEST(Join, PutsTheSeparatorOnlyBetweenParts) {
  EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(join(std::vector<std::string>{"", "b"}, ","), ",b") << "an empty first part counts";
  EXPECT_EQ(join(std::vector<std::string_view>{"only"}, ", "), "only");
  EXPECT_EQ(join(std::vector<std::string>{}, ", "), "");
}

TEST(JoinFirst, NamesTheFirstAndCountsTheRest) {
  std::vector<std::string> names = {"a", "b", "c"};
  EXPECT_EQ(join_first(names, 3), "a, b, c");
  EXPECT_EQ(join_first(names, 2, "'"), "'a', 'b' and 1 more");
  EXPECT_EQ(join_first(std::vector<std::string>{}, 2), "");
}

TEST(ParseInteger, TakesAWholeDecimalNumberAndNothingElse) {
  EXPECT_EQ(parse_integer("30"), 30);
  EXPECT_EQ(parse_integer("-3"), -3);
  for (const char* bad : {"", " 30", "30 ", "30s", "3.0", "+3", "99999999999999999999"}) {
    EXPECT_FALSE(parse_integer(bad).has_value()) << bad;
  }
}

TEST(Shortened, CutsLongTextAndSaysHowLongItWas) {
  EXPECT_EQ(shortened("short", 5), "short");
  EXPECT_EQ(shortened("a bit longer", 5), "a bit... (12 bytes)");
}

}  // namespace
}  // namespace dormant
