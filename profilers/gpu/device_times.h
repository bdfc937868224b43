// Each GPU's time over a session, from its work's start and end: kernel time and copy time
// (summed, so concurrent work counts each), busy time (the union of the work's intervals: any work
// at all on the device) and, against the session's wall time, idle time. Bounded: at most
// `max_devices` devices (the rest counted), and each device's intervals not yet merged are folded
// away oldest first past `max_intervals`, so that a flood of tiny disjoint pieces costs no more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace dormant::profilers::gpu {

struct DeviceTime {
  uint64_t kernel_ns = 0;
  uint64_t copy_ns = 0;  // memcpy and memset
  uint64_t busy_ns = 0;
};

class DeviceTimes {
 public:
  explicit DeviceTimes(size_t max_devices = 64, size_t max_intervals = 65536)
      : max_devices_(max_devices), max_intervals_(max_intervals) {}

  // One piece of work on `device` from `start_ns` to `end_ns` (any clock, the same for all).
  void add(uint32_t device, bool kernel, uint64_t start_ns, uint64_t end_ns);
  // Each device's times so far, by device id.
  std::map<uint32_t, DeviceTime> totals();
  uint64_t devices_past_bound() const { return devices_past_bound_; }

 private:
  struct Device {
    DeviceTime time;
    std::vector<std::pair<uint64_t, uint64_t>> intervals;  // not merged yet
    uint64_t merged_until = 0;  // the busy time before this is counted in time.busy_ns
  };
  // Merges a device's intervals into its busy time, keeping at most `keep` of the latest
  // merged ones, which later work may still overlap.
  static void merge(Device& device, size_t keep);

  size_t max_devices_;
  size_t max_intervals_;
  std::map<uint32_t, Device> devices_;
  uint64_t devices_past_bound_ = 0;
};

}  // namespace dormant::profilers::gpu
