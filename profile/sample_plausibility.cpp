#include "profile/sample_plausibility.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "common/profiling_limits.h"
#include "profile/gpu_devices.h"
#include "profile/idle_stacks.h"

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

uint64_t saturating_sum(uint64_t a, uint64_t b) { return b > UINT64_MAX - a ? UINT64_MAX : a + b; }

}  // namespace

uint64_t SampleCounts::cpu() const { return saturating_sum(cpu_busy, cpu_idle); }

uint64_t SampleCounts::total() const {
  uint64_t sum = cpu();
  for (const auto& [device, samples] : gpu) sum = saturating_sum(sum, samples);
  return sum;
}

SampleCounts count_samples(const CollapsedProfile& profile) {
  SampleCounts counts;
  profile.stacks.for_each([&](const StackView& stack) {
    uint64_t* sum = &counts.cpu_busy;
    if (auto device = gpu_device_of_stack(profile.stacks, stack)) {
      sum = &counts.gpu[*device];
    } else if (is_idle_stack(profile.stacks, stack)) {
      sum = &counts.cpu_idle;
    }
    *sum = saturating_sum(*sum, stack.count);
  });
  return counts;
}

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
  return check_plausible_samples(profile.header, count_samples(profile), duration_s);
}

Result<void> check_plausible_samples(const json& header, const SampleCounts& counts,
                                     double duration_s) {
  const json* metadata = member(header, "metadata");
  if (metadata == nullptr || !samples_are_clock_ticks(header)) return ok();
  const json* arguments = member(*metadata, "run_arguments");
  auto processors = positive_number(member(*metadata, "processors"));
  if (!processors) return ok();  // the header's validation has said so
  double frequency = positive_number(arguments ? member(*arguments, "frequency") : nullptr)
                         .value_or(static_cast<double>(kMaxFrequency));
  double ticks = (std::max(duration_s, 0.0) + 1) * frequency * 1.1;
  double most = ticks * *processors + 1;
  auto says = [&](uint64_t samples, const std::string& what) {
    return Error::invalid_argument(
        "profile: " + std::to_string(samples) + " samples of " + what + " in " + whole(duration_s) +
        " s at " + whole(frequency) + " Hz on " + whole(*processors) +
        " processors, more than the " + whole(most) +
        " such a session could take (duration times frequency times processors, and 10%)");
  };
  if (static_cast<double>(counts.cpu()) > most) return says(counts.cpu(), "CPU");
  for (const auto& [device, samples] : counts.gpu) {
    if (static_cast<double>(samples) > most) return says(samples, "GPU " + std::to_string(device));
  }
  return ok();
}

}  // namespace dormant::profile
