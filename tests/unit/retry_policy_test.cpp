#include "heartbeat/retry_policy.h"

#include <gtest/gtest.h>

namespace dormant::heartbeat {
namespace {

using std::chrono::milliseconds;

RetryPolicy policy(double jitter = 0) {
  RetryPolicy p;
  p.interval = milliseconds(1000);
  p.max_backoff = milliseconds(10000);
  p.jitter = jitter;
  return p;
}

TEST(RetryTimer, BacksOffFromTheIntervalUpToTheCapAndResetsOnSuccess) {
  RetryTimer timer(policy(), [] { return 0.5; });
  EXPECT_EQ(timer.after_success(), milliseconds(1000));
  EXPECT_EQ(timer.after_failure(), milliseconds(1000));
  EXPECT_EQ(timer.after_failure(), milliseconds(2000));
  EXPECT_EQ(timer.after_failure(), milliseconds(4000));
  EXPECT_EQ(timer.after_failure(), milliseconds(8000));
  EXPECT_EQ(timer.after_failure(), milliseconds(10000));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(timer.after_failure(), milliseconds(10000));
  EXPECT_EQ(timer.consecutive_failures(), 105);
  EXPECT_EQ(timer.after_success(), milliseconds(1000));
  EXPECT_EQ(timer.consecutive_failures(), 0);
  EXPECT_EQ(timer.after_failure(), milliseconds(1000)) << "backoff starts over";
}

TEST(RetryTimer, JitterStaysWithinItsBounds) {
  RetryTimer low(policy(0.2), [] { return 0.0; });
  RetryTimer high(policy(0.2), [] { return 0.999999; });
  EXPECT_EQ(low.after_success(), milliseconds(800));
  EXPECT_EQ(high.after_success(), milliseconds(1199));
  RetryTimer random(policy(0.2));
  for (int i = 0; i < 1000; ++i) {
    auto delay = random.after_success();
    ASSERT_GE(delay, milliseconds(800));
    ASSERT_LE(delay, milliseconds(1200));
  }
}

TEST(RetryTimer, AnIntervalLongerThanTheCapIsKept) {
  RetryPolicy slow = policy();
  slow.interval = milliseconds(60000);
  RetryTimer timer(slow, [] { return 0.5; });
  EXPECT_EQ(timer.after_failure(), milliseconds(60000));
  EXPECT_EQ(timer.after_failure(), milliseconds(60000));
}

TEST(RetryTimer, SettingsThatWouldSpinAreBroughtBack) {
  RetryPolicy wild;
  wild.interval = milliseconds(0);
  wild.max_backoff = milliseconds(0);
  wild.jitter = 5.0;
  RetryTimer low(wild, [] { return 0.0; });
  EXPECT_GE(low.after_success(), milliseconds(1)) << "a zero delay would retry in a hot loop";
  EXPECT_GE(low.after_failure(), milliseconds(1));
  RetryTimer high(wild, [] { return 0.999; });
  EXPECT_LE(high.after_success(), milliseconds(2)) << "jitter is at most 0.5";
}

}  // namespace
}  // namespace dormant::heartbeat
