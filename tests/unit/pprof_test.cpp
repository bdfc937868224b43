#include "profile/pprof/pprof.h"

#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/pprof_text.h"

namespace dormant::profile {
namespace {

using Frames = std::vector<std::string_view>;
using testing::decode_pprof;

TEST(Pprof, ProtocReadsTheStacksCountsAndLabelsBack) {
  StackTable table;
  table.add("web-1", "nginx", Frames{"main", "handle", "write_[k]"}, 6);
  table.add("web-1", "nginx", Frames{"main", "handle"}, 2);
  table.add("", "cron", Frames{"main", "\"quoted\" \xc3\xa9t\xc3\xa9 <x>"}, 1);
  PprofOptions options;
  options.frequency_hz = 99;
  options.time_nanos = 1'764'000'000'000'000'000;
  options.duration_nanos = 60'000'000'000;
  auto bytes = write_pprof(table, options);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message();
  ASSERT_GE(bytes->size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[0]), 0x1f) << "gzip'd, as go tool pprof reads it";

  auto decoded = decode_pprof(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  EXPECT_EQ(decoded->strings.at(0), "") << "the string table starts with the empty string";
  EXPECT_EQ(decoded->sample_type, "samples/count");
  EXPECT_EQ(decoded->period_type, "cpu/nanoseconds");
  EXPECT_EQ(decoded->period, 1'000'000'000 / 99);
  EXPECT_EQ(decoded->time_nanos, options.time_nanos);
  EXPECT_EQ(decoded->duration_nanos, options.duration_nanos);
  EXPECT_EQ(decoded->locations, 4u) << "one per distinct frame";
  EXPECT_EQ(decoded->functions, 4u);
  EXPECT_EQ(decoded->stacks, (std::map<std::string, int64_t>{
                                 {"comm=nginx,container=web-1|main;handle;write_[k]", 6},
                                 {"comm=nginx,container=web-1|main;handle", 2},
                                 {"comm=cron|main;\"quoted\" \xc3\xa9t\xc3\xa9 <x>", 1}}))
      << decoded->text;
}

TEST(Pprof, AnUnknownFrequencyLeavesThePeriodOutAndAnEmptyTableIsValid) {
  auto bytes = write_pprof(StackTable(), PprofOptions());
  ASSERT_TRUE(bytes.ok());
  auto decoded = decode_pprof(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  EXPECT_EQ(decoded->sample_type, "samples/count");
  EXPECT_EQ(decoded->period_type, "");
  EXPECT_EQ(decoded->period, 0);
  EXPECT_TRUE(decoded->stacks.empty());
}

}  // namespace
}  // namespace dormant::profile
