#include "profilers/gpu/device_times.h"

#include <algorithm>

namespace dormant::profilers::gpu {

void DeviceTimes::add(uint32_t device, bool kernel, uint64_t start_ns, uint64_t end_ns) {
  auto found = devices_.find(device);
  if (found == devices_.end()) {
    if (devices_.size() >= max_devices_) {
      ++devices_past_bound_;
      return;
    }
    found = devices_.emplace(device, Device{}).first;
  }
  Device& on = found->second;
  uint64_t duration = end_ns > start_ns ? end_ns - start_ns : 0;
  (kernel ? on.time.kernel_ns : on.time.copy_ns) += duration;
  if (duration == 0) return;
  on.intervals.emplace_back(start_ns, end_ns);
  if (on.intervals.size() > max_intervals_) merge(on, max_intervals_ / 2);
}

void DeviceTimes::merge(Device& device, size_t keep) {
  auto& intervals = device.intervals;
  std::sort(intervals.begin(), intervals.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (auto [start, end] : intervals) {
    start = std::max(start, device.merged_until);  // before it: counted already
    if (end <= start) continue;
    if (!merged.empty() && start <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(start, end);
    }
  }
  size_t finished = merged.size() > keep ? merged.size() - keep : 0;
  for (size_t i = 0; i < finished; ++i) {
    device.time.busy_ns += merged[i].second - merged[i].first;
    device.merged_until = merged[i].second;
  }
  intervals.assign(merged.begin() + static_cast<ptrdiff_t>(finished), merged.end());
}

std::map<uint32_t, DeviceTime> DeviceTimes::totals() {
  std::map<uint32_t, DeviceTime> totals;
  for (auto& [id, device] : devices_) {
    merge(device, max_intervals_ / 2);  // what later work can no longer overlap much, for good
    Device whole = device;
    merge(whole, 0);
    totals.emplace(id, whole.time);
  }
  return totals;
}

}  // namespace dormant::profilers::gpu
