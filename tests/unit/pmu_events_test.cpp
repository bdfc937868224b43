#include "profilers/perf/pmu_events.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <stdlib.h>

namespace dormant::profilers::perf {
namespace {

namespace fs = std::filesystem;
using Events = std::vector<std::string>;

Events tried(const Events& requested, const Events& available) {
  auto events = events_to_try(requested, available);
  EXPECT_TRUE(events.ok()) << events.error().message();
  return events.ok() ? *events : Events{};
}

TEST(PmuEvents, FoundUnderAnyEventSourceByTheirSysfsNames) {
  std::string pattern = (fs::temp_directory_path() / "pmu-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  fs::path devices = pattern;
  fs::create_directories(devices / "software");  // no events folder
  fs::create_directories(devices / "cpu_core" / "events");
  fs::create_directories(devices / "cpu_atom" / "events");
  std::ofstream(devices / "cpu_core" / "events" / "cpu-cycles") << "event=0x3c\n";
  std::ofstream(devices / "cpu_atom" / "events" / "cache-misses") << "event=0x2e,umask=0x41\n";
  std::ofstream(devices / "cpu_atom" / "events" / "cpu-cycles") << "event=0x3c\n";
  std::ofstream(devices / "cpu_atom" / "events" / "topdown-retiring") << "event=0x00\n";
  EXPECT_EQ(pmu_events(devices), (Events{"cycles", "cache-misses"}));
  EXPECT_TRUE(pmu_events(devices / "missing").empty());
  fs::remove_all(devices);
}

TEST(PmuEvents, CyclesFallsBackToCpuClockAsPerfDoes) {
  EXPECT_EQ(tried({"cycles"}, {}), Events{"cpu-clock"});
  EXPECT_EQ(tried({"cycles"}, {"cycles", "instructions"}), (Events{"cycles", "cpu-clock"}));
}

TEST(PmuEvents, TheRequestedOrderIsKeptAndWhatTheHostLacksIsLeftOut) {
  Events host = {"cycles", "instructions", "cache-misses"};
  EXPECT_EQ(tried({"cache-misses", "branch-misses", "instructions"}, host),
            (Events{"cache-misses", "instructions"}));
  EXPECT_EQ(tried({"branch-misses", "cycles"}, host), (Events{"cycles", "cpu-clock"}));
  EXPECT_EQ(tried({"branch-misses", "cycles"}, {}), Events{"cpu-clock"});
}

TEST(PmuEvents, AnEarlierSessionsEventSkipsTheTrialOnlyWhereItWouldBeChosenFirst) {
  EXPECT_TRUE(known_event_applies("cpu-clock", {"cpu-clock"}));
  EXPECT_TRUE(known_event_applies("cycles", {"cycles", "cpu-clock"}));
  EXPECT_TRUE(known_event_applies("cpu-clock", {"cycles", "cpu-clock"}))
      << "cycles is offered but did not record";
  EXPECT_FALSE(known_event_applies("cycles", {"cache-misses", "cycles", "cpu-clock"}))
      << "cache-misses comes first: it is tried";
  EXPECT_FALSE(known_event_applies("cpu-clock", {"cache-misses", "cycles", "cpu-clock"}));
  EXPECT_FALSE(known_event_applies("instructions", {"cycles", "cpu-clock"}));
  EXPECT_FALSE(known_event_applies("", {"cpu-clock"}));
}

TEST(PmuEvents, NothingThisHostCanCountIsAnErrorThatSaysWhy) {
  auto none = events_to_try({"cache-misses", "instructions"}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message(),
            "perf cannot count cache-misses, instructions on this host: its PMUs offer no hardware "
            "event (a virtual machine, say); ask for cycles, which falls back to cpu-clock");
  auto other = events_to_try({"branch-misses"}, {"cycles", "instructions"});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message(),
            "perf cannot count branch-misses on this host: its PMUs offer cycles, instructions; "
            "ask for cycles, which falls back to cpu-clock");
}

}  // namespace
}  // namespace dormant::profilers::perf
