#include "profile/gpu_devices.h"

#include <algorithm>
#include <string>

#include <gtest/gtest.h>

namespace dormant::profile {
namespace {

using nlohmann::json;

TEST(GpuDevices, OnlyAGpuFrameNamesADevice) {
  EXPECT_EQ(gpu_device_of_frame("[GPU 0]"), 0u);
  EXPECT_EQ(gpu_device_of_frame("[GPU 17]"), 17u);
  for (const char* frame : {"[GPU] gemm", "[GPU ?]", "[GPU -1]", "[GPU 1x]", "[GPU 1", "GPU 1]",
                            "[GPU 99999999999]", "[GPU ]"}) {
    EXPECT_EQ(gpu_device_of_frame(frame), std::nullopt) << frame;
  }
}

TEST(GpuDevices, AHeaderOfAnyShapeGivesAtMostItsSoundFiguresAndSixtyFourDevices) {
  CollapsedProfile profile;
  std::string_view stack[] = {"[GPU 3]", "[GPU] k"};
  profile.stacks.add("", "app", stack, 4);
  json many = json::object();
  for (int device = 0; device < 1000; ++device) {
    many[std::to_string(device)] = {{"busy_ns", device}, {"idle_ns", -1}, {"copy_ns", 1.5}};
  }
  for (json header :
       {json(), json::array(), json{{"gpu", 3}}, json{{"gpu", {{"gpu_devices", "x"}}}},
        json{{"gpu", {{"gpu_devices", many}}}}}) {
    profile.header = header;
    json devices = gpu_devices(profile);
    ASSERT_TRUE(devices.is_array());
    EXPECT_LE(devices.size(), kMaxGpuDevices);
    auto three = std::find_if(devices.begin(), devices.end(),
                              [](const json& device) { return device["device"] == 3; });
    ASSERT_NE(three, devices.end()) << "the stacks' device is kept: " << header.dump();
    EXPECT_EQ((*three)["samples"], 4);
    for (const json& device : devices) {
      EXPECT_FALSE(device.contains("idle_ns") || device.contains("copy_ns")) << device.dump();
    }
  }
}

TEST(GpuDevices, OneDevicesStacksAlone) {
  StackTable stacks;
  std::string_view zero[] = {"[GPU 0]", "main", "[GPU] a"};
  std::string_view one[] = {"[GPU 1]", "main", "[GPU] b"};
  std::string_view cpu[] = {"main", "work"};
  stacks.add("", "app", zero, 2);
  stacks.add("box", "app", one, 3);
  stacks.add("", "app", cpu, 7);
  StackTable chosen = stacks_of_gpu_device(stacks, 1);
  EXPECT_EQ(chosen.total_samples(), 3u);
  EXPECT_EQ(chosen.distinct_stacks(), 1u);
  chosen.for_each([&](const StackView& stack) {
    EXPECT_EQ(stack.container, "box");
    EXPECT_EQ(chosen.string(stack.frame_ids.back()), "[GPU] b");
  });
  EXPECT_TRUE(stacks_of_gpu_device(stacks, 2).empty());
}

}  // namespace
}  // namespace dormant::profile
