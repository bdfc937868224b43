// The teardown audit finds what a session left behind: fds, threads, mapped files, memory.
#include "agent/resource_audit.h"

#include <atomic>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dormant::agent {
namespace {

constexpr ResourceAudit::Limits kLimits{
    .max_sockets = 0, .anon_slack_kb = 256, .uss_slack_kb = 256};

std::string excess_of(const ResourceAudit& audit, bool with_memory = false) {
  auto report = audit.audit(with_memory);
  EXPECT_TRUE(report.ok()) << report.error().message();
  std::string all;
  for (const auto& excess : report->excess) all += excess + "\n";
  return all;
}

TEST(ResourceAudit, AnFdLeftOpenIsNamedAndItsClosingCleansTheAudit) {
  ResourceAudit audit(kLimits);
  ASSERT_TRUE(audit.take_baseline().ok());
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string excess = excess_of(audit);
  EXPECT_NE(excess.find("2 open fds more than at idle: pipe:["), std::string::npos) << excess;
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(excess_of(audit), "");
}

TEST(ResourceAudit, ConnectionsAboveTheBaselineAreSeenFromTheFdTable) {
  ResourceAudit audit(kLimits);
  ASSERT_TRUE(audit.take_baseline().ok());
  EXPECT_FALSE(audit.connections_above_baseline().value());
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  EXPECT_TRUE(audit.connections_above_baseline().value());
  ::close(pair[0]);
  ::close(pair[1]);
  EXPECT_FALSE(audit.connections_above_baseline().value());
}

TEST(ResourceAudit, AThreadStillRunningIsFound) {
  ResourceAudit audit(kLimits);
  ASSERT_TRUE(audit.take_baseline().ok());
  std::atomic<bool> done = false;
  std::thread lingering([&] {
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_NE(excess_of(audit).find("1 threads more than at idle"), std::string::npos);
  done = true;
  lingering.join();
  EXPECT_EQ(excess_of(audit), "");
}

TEST(ResourceAudit, ALibraryStillMappedIsNamedUntilItIsUnloaded) {
  ResourceAudit audit(kLimits);
  ASSERT_TRUE(audit.take_baseline().ok());
  void* library = ::dlopen(SYMBOL_TARGET_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  std::string excess = excess_of(audit);
  EXPECT_NE(excess.find("files mapped that were not at idle: "), std::string::npos) << excess;
  EXPECT_NE(excess.find("libsymbol_target_lib.so"), std::string::npos) << excess;
  ::dlclose(library);
  EXPECT_EQ(excess_of(audit), "");
}

TEST(ResourceAudit, MemoryIsComparedOnlyWhenAskedAndInBuildsThatCanMeasureIt) {
  ResourceAudit audit(kLimits);
  ASSERT_TRUE(audit.take_baseline().ok());
  std::vector<char> held(8 << 20, 1);  // touched: private, anonymous
  auto without = audit.audit(/*with_memory=*/false);
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->memory_compared);
  EXPECT_TRUE(without->clean());
  auto with = audit.audit(/*with_memory=*/true);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->memory_compared, kMemoryAudited);
  if (kMemoryAudited) {
    std::string all;
    for (const auto& excess : with->excess) all += excess + "\n";
    EXPECT_NE(all.find("USS "), std::string::npos) << all;
    EXPECT_NE(all.find("RssAnon "), std::string::npos) << all;
  }
  EXPECT_GT(with->now.uss_kb, 8u << 10);
  EXPECT_GT(with->now.pss_kb, 0u);
}

}  // namespace
}  // namespace dormant::agent
