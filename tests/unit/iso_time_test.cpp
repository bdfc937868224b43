#include "common/iso_time.h"

#include <gtest/gtest.h>

namespace dormant {
namespace {

using std::chrono::system_clock;

system_clock::time_point utc(int64_t unix_seconds) {
  return system_clock::time_point(std::chrono::seconds(unix_seconds));
}

TEST(ParseIsoTime, AcceptsTheFormsAgentsAndPeopleWrite) {
  const int64_t t = 1763805600;  // 2025-11-22T10:00:00Z
  EXPECT_EQ(parse_iso_time("2025-11-22T10:00:00"), utc(t)) << "naive: UTC, as gProfiler writes";
  EXPECT_EQ(parse_iso_time("2025-11-22T10:00:00Z"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22 10:00:00"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22T10:00"), utc(t)) << "seconds are optional to Studio";
  EXPECT_EQ(parse_iso_time("2025-11-22T12:00:00+02:00"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22T12:00:00+02"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22T12:30:00+0230"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22T09:30:00-00:30"), utc(t));
  EXPECT_EQ(parse_iso_time("2025-11-22T10:00:00.25Z"), utc(t) + std::chrono::milliseconds(250));
  EXPECT_EQ(parse_iso_time("2025-11-22T10:00:00.123456789"),
            utc(t) + std::chrono::microseconds(123456));
}

TEST(ParseIsoTime, RefusesWhatIsNotATime) {
  for (const char* text :
       {"", "yesterday", "2025-11-22", "2025-02-31T00:00:00", "2025-13-01T00:00:00",
        "-025-11-22T10:00:00", "2025-11-22T24:00:00", "2025-11-22T10:00:00+-1:00",
        "2025-11-22T10:00:00.", "2025-11-22T10:00:00Zjunk", "2025-11-22T10:00:00+2",
        "2025-11-22T10:00:00+02:3", "2025-11-22T10:00:00+24:00", "2025-11-22T10",
        "1969-12-31T23:59:59", "2200-01-01T00:00:00", "1785000000"}) {
    EXPECT_EQ(parse_iso_time(text), std::nullopt) << text;
  }
}

TEST(ParseIsoTime, ReadsBackWhatItWrites) {
  const auto time = utc(1785000000) + std::chrono::milliseconds(7);
  EXPECT_EQ(parse_iso_time(iso_utc(time, /*with_millis=*/true)), time);
  EXPECT_EQ(parse_iso_time(iso_utc(time)), utc(1785000000));
}

}  // namespace
}  // namespace dormant
