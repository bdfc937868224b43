#include "agent/agent_health.h"

#include <string>

#include <gtest/gtest.h>

namespace dormant::agent {
namespace {

// Issue 22: the server refuses a heartbeat whose agent_health is over 64 KiB, and with it every
// command; a perf error's stderr or a server's long message must not cost the agent its commands.
TEST(AgentHealth, AReportTooLargeForTheServerLosesItsLargestPartsAndSaysWhich) {
  nlohmann::json health = {
      {"state", "idle"},
      {"profilers", {{"perf", {{"reason", std::string(100'000, 'p')}}}}},
      {"heartbeat", {{"consecutive_failures", 3}, {"last_error", std::string(50'000, 'e')}}},
      {"spool", {{"profiles", 2}}}};
  fit_within(health, 64 << 10);
  EXPECT_LE(health.dump().size(), 64u << 10);
  EXPECT_EQ(health["state"], "idle");
  EXPECT_EQ(health["spool"]["profiles"], 2);
  EXPECT_EQ(health["left_out"], nlohmann::json::array({"profilers"}))
      << "the heartbeat's 50 kB fit once the 100 kB are gone";

  nlohmann::json small = {{"state", "running"}};
  fit_within(small, 64 << 10);
  EXPECT_EQ(small, (nlohmann::json{{"state", "running"}})) << "what fits is left alone";
}

}  // namespace
}  // namespace dormant::agent
