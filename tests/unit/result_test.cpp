#include "common/result.h"

#include <memory>

#include <gtest/gtest.h>

namespace dormant {
namespace {

Result<int> half(int value) {
  if (value % 2 != 0) return Error::invalid_argument(std::to_string(value) + " is odd");
  return value / 2;
}

TEST(Result, HoldsAValueOrAnError) {
  auto good = half(8);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  auto bad = half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "3 is odd");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Result, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> boxed(std::make_unique<int>(5));
  std::unique_ptr<int> taken = std::move(boxed).value();
  EXPECT_EQ(*taken, 5);
}

TEST(Result, VoidResult) {
  Result<void> fine = ok();
  EXPECT_TRUE(fine.ok());
  Result<void> failed = Error(ErrorKind::kTimeout, "too slow");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().kind(), ErrorKind::kTimeout);
}

TEST(Error, FromErrnoNamesTheCallAndTheReason) {
  Error error = Error::from_errno("open(/etc/dormant.conf)", ENOENT);
  EXPECT_EQ(error.kind(), ErrorKind::kNotFound);
  EXPECT_EQ(error.sys_errno(), ENOENT);
  EXPECT_EQ(error.message(), "open(/etc/dormant.conf): No such file or directory");
  EXPECT_EQ(Error::from_errno("bpf", EPERM).kind(), ErrorKind::kSystem);
}

TEST(Error, ContextGoesInFront) {
  Error error = Error::parse("line 3: expected a number").with_context("reading perf output");
  EXPECT_EQ(error.message(), "reading perf output: line 3: expected a number");
  EXPECT_EQ(to_string(error.kind()), "parse");
}

}  // namespace
}  // namespace dormant
