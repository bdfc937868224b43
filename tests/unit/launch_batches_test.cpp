// Batches of launches as libdormant_cupti.so hands them over, read back: whole ones launch by
// launch, with their native and Python frames; hostile ones (depths past the bounds, frames past
// the bytes, more launches than there are) end where they stop holding together.
#include "profilers/gpu/launch_batches.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace dormant::profilers::gpu {
namespace {

struct Read {
  std::vector<dormant_cupti_launch> launches;
  bool whole = false;
};

// A launch's bytes as the library writes them: header, native frames, Python frames.
void append_launch(std::vector<uint8_t>& batch, uint32_t correlation_id, uint32_t depth,
                   uint32_t python_depth) {
  dormant_cupti_launch launch{};
  launch.correlation_id = correlation_id;
  launch.depth = depth;
  launch.python_depth = python_depth;
  size_t header = offsetof(dormant_cupti_launch, frames);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&launch);
  batch.insert(batch.end(), bytes, bytes + header);
  for (uint32_t i = 0; i < depth; ++i) {
    uint64_t frame = 0x1000 * correlation_id + i;
    batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&frame),
                 reinterpret_cast<uint8_t*>(&frame) + 8);
  }
  for (uint32_t i = 0; i < python_depth; ++i) {
    uint64_t code = 0x7000000 + 0x100 * correlation_id + 16 * i + (i == 0 ? 1 : 0);
    batch.insert(batch.end(), reinterpret_cast<uint8_t*>(&code),
                 reinterpret_cast<uint8_t*>(&code) + 8);
  }
}

Read read(const std::vector<uint8_t>& batch, uint32_t count) {
  Read read;
  read.whole =
      for_each_launch(batch.data(), batch.size(), count,
                      [&](const dormant_cupti_launch& launch) { read.launches.push_back(launch); });
  return read;
}

TEST(LaunchBatchesTest, EachLaunchComesWithItsNativeAndPythonFrames) {
  std::vector<uint8_t> batch;
  append_launch(batch, 1, 5, 3);
  append_launch(batch, 2, DORMANT_CUPTI_MAX_FRAMES, DORMANT_CUPTI_MAX_PYTHON_FRAMES);
  append_launch(batch, 3, 0, 0);
  Read got = read(batch, 3);
  EXPECT_TRUE(got.whole);
  ASSERT_EQ(got.launches.size(), 3u);
  EXPECT_EQ(got.launches[0].depth, 5u);
  EXPECT_EQ(got.launches[0].frames[4], 0x1004u);
  EXPECT_EQ(got.launches[0].python_depth, 3u);
  EXPECT_EQ(got.launches[0].python[0], 0x7000101u) << "the entry bit stays";
  EXPECT_EQ(got.launches[0].python[2], 0x7000120u);
  EXPECT_EQ(got.launches[1].python[DORMANT_CUPTI_MAX_PYTHON_FRAMES - 1],
            0x7000200u + 16 * (DORMANT_CUPTI_MAX_PYTHON_FRAMES - 1));
  EXPECT_EQ(got.launches[2].correlation_id, 3u);
}

TEST(LaunchBatchesTest, AHostileLaunchEndsTheBatchWhereItStops) {
  std::vector<uint8_t> good;
  append_launch(good, 1, 4, 2);
  for (auto [depth, python_depth] : {std::pair<uint32_t, uint32_t>{DORMANT_CUPTI_MAX_FRAMES + 1, 0},
                                     {0, DORMANT_CUPTI_MAX_PYTHON_FRAMES + 1},
                                     {0xffffffffu, 0xffffffffu},
                                     {4, 0x80000000u}}) {
    std::vector<uint8_t> batch = good;
    append_launch(batch, 2, 0, 0);
    // The second launch's header says more than it has, or more than the probe allows.
    auto* second =
        reinterpret_cast<dormant_cupti_launch*>(batch.data() + good.size());  // header only
    std::memcpy(&second->depth, &depth, sizeof(depth));
    std::memcpy(&second->python_depth, &python_depth, sizeof(python_depth));
    Read got = read(batch, 2);
    EXPECT_FALSE(got.whole) << depth << " " << python_depth;
    ASSERT_EQ(got.launches.size(), 1u) << "the launch before it is kept";
  }
  std::vector<uint8_t> cut = good;
  cut.pop_back();  // its last Python frame runs past the bytes present
  EXPECT_FALSE(read(cut, 1).whole);
  EXPECT_TRUE(read(cut, 1).launches.empty());
  Read more = read(good, 1000);
  EXPECT_FALSE(more.whole) << "more launches than the bytes hold";
  EXPECT_EQ(more.launches.size(), 1u);
}

}  // namespace
}  // namespace dormant::profilers::gpu
