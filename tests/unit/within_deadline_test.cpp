#include "common/within_deadline.h"

#include <atomic>
#include <future>
#include <memory>

#include <gtest/gtest.h>

#include "tests/support/eventually.h"

namespace dormant {
namespace {

TEST(WithinDeadline, WorkDoneInTimeGivesItsResult) {
  auto result =
      within_deadline<int>(std::chrono::seconds(60), "adding", [] { return Result<int>(42); });
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(*result, 42);
}

TEST(WithinDeadline, AnErrorOrAThrowIsTheCallersError) {
  auto failed = within_deadline<int>(std::chrono::seconds(60), "failing",
                                     [] { return Result<int>(Error::parse("bad input")); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "bad input");
  auto thrown = within_deadline<int>(std::chrono::seconds(60), "throwing",
                                     []() -> Result<int> { throw std::runtime_error("boom"); });
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.error().message(), "boom");
}

// Work blocked until the test lets it go: the caller is back with a timeout while it blocks, and
// what the work built once let go is dropped by its own thread.
TEST(WithinDeadline, BlockedWorkIsGivenUpAndWhatItBuiltIsDroppedWhenItEnds) {
  std::promise<void> let_go;
  std::shared_future<void> released = let_go.get_future().share();
  auto dropped = std::make_shared<std::atomic<bool>>(false);
  struct Built {
    std::shared_ptr<std::atomic<bool>> dropped;
    ~Built() {
      if (dropped) *dropped = true;
    }
    Built(std::shared_ptr<std::atomic<bool>> flag) : dropped(std::move(flag)) {}
    Built(Built&& other) noexcept : dropped(std::move(other.dropped)) {}
  };
  auto result = within_deadline<std::unique_ptr<Built>>(
      std::chrono::milliseconds(50), "blocking", [released, dropped] {
        released.wait();
        return Result<std::unique_ptr<Built>>(std::make_unique<Built>(dropped));
      });
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind(), ErrorKind::kTimeout);
  EXPECT_EQ(result.error().message(), "blocking took longer than its 50 ms: given up");
  EXPECT_FALSE(*dropped);
  let_go.set_value();
  EXPECT_TRUE(
      dormant::testing::eventually([&] { return dropped->load(); }, std::chrono::seconds(30)));
}

}  // namespace
}  // namespace dormant
