// The launch stacks' fast unwinder against libgcc's: the same frames, through code with and
// without frame pointers (glibc's qsort, std::sort and std::function), at every depth.
#include "cupti_lib/src/frame_unwinder.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>
#include <unwind.h>

namespace dormant::cupti {
namespace {

_Unwind_Reason_Code add_frame(_Unwind_Context* context, void* argument) {
  auto& frames = *static_cast<std::vector<uint64_t>*>(argument);
  int before_instruction = 0;
  uintptr_t address = _Unwind_GetIPInfo(context, &before_instruction);
  if (address == 0) return _URC_END_OF_STACK;
  frames.push_back(before_instruction ? address : address - 1);
  return _URC_NO_REASON;
}

// libgcc's stack from here: this function's frame first.
__attribute__((noinline)) std::vector<uint64_t> libgcc_stack() {
  std::vector<uint64_t> frames;
  _Unwind_Backtrace(add_frame, &frames);
  return frames;
}

struct Stacks {
  std::vector<uint64_t> fast;  // from the caller of unwind_caller_stack
  std::vector<uint64_t> libgcc;
};

// Both stacks taken in one function: from their callers' frames out, they must agree.
__attribute__((noinline)) void take_both(Stacks& stacks) {
  uint64_t frames[512];
  int depth = unwind_caller_stack(frames, 512);
  ASSERT_GT(depth, 0) << "the fast unwinder gave up";
  stacks.fast.assign(frames, frames + depth);
  stacks.libgcc = libgcc_stack();
  asm volatile("" ::: "memory");  // no tail call: this frame stays
}

__attribute__((noinline)) void recurse(int levels, Stacks& stacks) {
  if (levels == 0) {
    take_both(stacks);
  } else {
    recurse(levels - 1, stacks);
  }
  asm volatile("" ::: "memory");
}

void expect_same_callers(const Stacks& stacks) {
  // fast[0] and libgcc[1] are two call sites in take_both; its callers follow in both.
  ASSERT_GE(stacks.fast.size(), 2u);
  ASSERT_GE(stacks.libgcc.size(), 3u);
  std::vector<uint64_t> fast(stacks.fast.begin() + 1, stacks.fast.end());
  std::vector<uint64_t> libgcc(stacks.libgcc.begin() + 2, stacks.libgcc.end());
  EXPECT_EQ(fast, libgcc);
}

TEST(FrameUnwinder, AgreesWithLibgccAtEveryDepth) {
  for (int levels : {0, 1, 5, 40, 200}) {
    Stacks stacks;
    recurse(levels, stacks);
    expect_same_callers(stacks);
    EXPECT_GE(stacks.fast.size(), static_cast<size_t>(levels) + 2);
  }
}

TEST(FrameUnwinder, AgreesWithLibgccThroughLibstdcxx) {
  Stacks stacks;
  std::vector<int> numbers = {5, 3, 9, 1};
  bool taken = false;
  std::function<void()> through_function = [&] {
    std::sort(numbers.begin(), numbers.end(), [&](int a, int b) {
      if (!taken) {
        taken = true;
        recurse(3, stacks);
      }
      return a < b;
    });
  };
  through_function();
  ASSERT_TRUE(taken);
  expect_same_callers(stacks);
}

// glibc is built without frame pointers: qsort's frames between the comparator and the caller.
Stacks* g_qsort_stacks = nullptr;
int compare_taking_stacks(const void* a, const void* b) {
  if (g_qsort_stacks != nullptr) {
    recurse(2, *g_qsort_stacks);
    g_qsort_stacks = nullptr;
  }
  return *static_cast<const int*>(a) - *static_cast<const int*>(b);
}

TEST(FrameUnwinder, AgreesWithLibgccThroughGlibcsQsort) {
  Stacks stacks;
  g_qsort_stacks = &stacks;
  int numbers[] = {4, 2, 8, 6, 1};
  std::qsort(numbers, std::size(numbers), sizeof(int), compare_taking_stacks);
  expect_same_callers(stacks);
}

TEST(FrameUnwinder, StopsAtTheCapacity) {
  uint64_t frames[3];
  EXPECT_EQ(unwind_caller_stack(frames, 3), 3);
}

}  // namespace
}  // namespace dormant::cupti
