// The running kernel's version, for tests whose expectations depend on it:
// "6.1.0-18-amd64" is 6.1.
#pragma once

#include <compare>
#include <optional>
#include <string_view>

namespace dormant {

struct KernelVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
};

// The major and minor numbers a uname release starts with; nullopt when it starts otherwise.
std::optional<KernelVersion> parse_kernel_release(std::string_view release);

// This host's kernel; nullopt when uname(2) fails or its release cannot be read.
std::optional<KernelVersion> running_kernel_version();

}  // namespace dormant
