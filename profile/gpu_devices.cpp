#include "profile/gpu_devices.h"

#include <map>
#include <string>

#include "common/text.h"

namespace dormant::profile {
namespace {

constexpr const char* kFigures[] = {"kernel_ns", "copy_ns", "busy_ns", "idle_ns", "wall_ns"};

std::optional<uint32_t> decimal(std::string_view text) {
  auto value = parse_integer(text);
  if (!value || *value < 0 || *value > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

}  // namespace

std::optional<uint32_t> gpu_device_of_frame(std::string_view frame) {
  constexpr std::string_view kPrefix = "[GPU ";
  if (!frame.starts_with(kPrefix) || !frame.ends_with(']')) return std::nullopt;
  return decimal(frame.substr(kPrefix.size(), frame.size() - kPrefix.size() - 1));
}

std::optional<uint32_t> gpu_device_of_stack(const StackTable& stacks, const StackView& stack) {
  if (stack.frame_ids.empty()) return std::nullopt;
  return gpu_device_of_frame(stacks.string(stack.frame_ids.front()));
}

nlohmann::json gpu_devices(const CollapsedProfile& profile) {
  std::map<uint32_t, nlohmann::json> devices;
  auto device = [&](uint32_t id) -> nlohmann::json* {
    auto found = devices.find(id);
    if (found != devices.end()) return &found->second;
    if (devices.size() >= kMaxGpuDevices) return nullptr;
    return &(devices[id] = {{"device", id}, {"samples", 0}});
  };
  profile.stacks.for_each([&](const StackView& stack) {
    auto id = gpu_device_of_stack(profile.stacks, stack);
    if (!id) return;
    if (nlohmann::json* entry = device(*id)) {
      (*entry)["samples"] = (*entry)["samples"].get<uint64_t>() + stack.count;
    }
  });
  const nlohmann::json* facts = nullptr;
  if (profile.header.is_object()) {
    auto gpu = profile.header.find("gpu");
    if (gpu != profile.header.end() && gpu->is_object()) {
      auto listed = gpu->find("gpu_devices");
      if (listed != gpu->end() && listed->is_object()) facts = &*listed;
    }
  }
  if (facts != nullptr) {
    for (const auto& [key, figures] : facts->items()) {
      auto id = decimal(key);
      nlohmann::json* entry = id && figures.is_object() ? device(*id) : nullptr;
      if (entry == nullptr) continue;
      for (const char* figure : kFigures) {
        auto value = figures.find(figure);
        if (value != figures.end() && value->is_number_unsigned()) {
          (*entry)[figure] = value->get<uint64_t>();
        }
      }
    }
  }
  auto listed = nlohmann::json::array();
  for (auto& [id, entry] : devices) listed.push_back(std::move(entry));
  return listed;
}

StackTable stacks_of_gpu_device(const StackTable& stacks, uint32_t device) {
  StackTable chosen;
  stacks.for_each([&](const StackView& stack) {
    if (gpu_device_of_stack(stacks, stack) != device) return;
    std::vector<std::string_view> frames;
    frames.reserve(stack.frame_ids.size());
    for (StringId id : stack.frame_ids) frames.push_back(stacks.string(id));
    chosen.add(stack.container, stack.comm, frames, stack.count);
  });
  return chosen;
}

}  // namespace dormant::profile
