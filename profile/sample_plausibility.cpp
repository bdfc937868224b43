#include "profile/sample_plausibility.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "common/profiling_limits.h"
#include "profile/gpu_devices.h"

namespace dormant::profile {
namespace {

using nlohmann::json;

const json* member(const json& object, const char* name) {
  if (!object.is_object()) return nullptr;
  auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

// A positive number, or a string that is one ("11", as some agents send it).
std::optional<double> positive_number(const json* value) {
  if (value == nullptr) return std::nullopt;
  double number = 0;
  if (value->is_number()) {
    number = value->get<double>();
  } else if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!std::isfinite(number) || number <= 0) return std::nullopt;
  return number;
}

std::string whole(double number) { return std::to_string(static_cast<uint64_t>(number)); }

}  // namespace

bool samples_are_clock_ticks(const json& header) {
  const json* metadata = member(header, "metadata");
  if (metadata == nullptr) return true;
  const json* mode = member(*metadata, "profiling_mode");
  if (mode != nullptr && !(mode->is_string() && mode->get_ref<const std::string&>() == "cpu")) {
    return false;
  }
  const json* arguments = member(*metadata, "run_arguments");
  const json* java_mode = arguments ? member(*arguments, "java_async_profiler_mode") : nullptr;
  return java_mode == nullptr || *java_mode != "wall";
}

Result<void> check_plausible_samples(const CollapsedProfile& profile, double duration_s) {
  const json* metadata = member(profile.header, "metadata");
  if (metadata == nullptr || !samples_are_clock_ticks(profile.header)) return ok();
  const json* arguments = member(*metadata, "run_arguments");
  auto processors = positive_number(member(*metadata, "processors"));
  if (!processors) return ok();  // the header's validation has said so
  double frequency = positive_number(arguments ? member(*arguments, "frequency") : nullptr)
                         .value_or(static_cast<double>(kMaxFrequency));
  double ticks = (std::max(duration_s, 0.0) + 1) * frequency * 1.1;
  double most = ticks * *processors + 1;
  uint64_t cpu = 0;
  std::map<uint32_t, uint64_t> gpu;  // by device
  profile.stacks.for_each([&](const StackView& stack) {
    auto device = gpu_device_of_stack(profile.stacks, stack);
    (device ? gpu[*device] : cpu) += stack.count;
  });
  auto says = [&](uint64_t samples, const std::string& what) {
    return Error::invalid_argument(
        "profile: " + std::to_string(samples) + " samples of " + what + " in " + whole(duration_s) +
        " s at " + whole(frequency) + " Hz on " + whole(*processors) +
        " processors, more than the " + whole(most) +
        " such a session could take (duration times frequency times processors, and 10%)");
  };
  if (static_cast<double>(cpu) > most) return says(cpu, "CPU");
  for (const auto& [device, samples] : gpu) {
    if (static_cast<double>(samples) > most) return says(samples, "GPU " + std::to_string(device));
  }
  return ok();
}

}  // namespace dormant::profile
