#include "tests/support/kernel_release.h"

#include <charconv>

#include <sys/utsname.h>

namespace dormant {
namespace {

// A decimal number at the front of `text`, which then starts after it.
std::optional<int> take_number(std::string_view& text) {
  int value = 0;
  auto parsed = std::from_chars(text.data(), text.data() + text.size(), value);
  if (parsed.ec != std::errc() || value < 0) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(parsed.ptr - text.data()));
  return value;
}

}  // namespace

std::optional<KernelVersion> parse_kernel_release(std::string_view release) {
  auto major = take_number(release);
  if (!major || release.empty() || release.front() != '.') return std::nullopt;
  release.remove_prefix(1);
  auto minor = take_number(release);
  if (!minor) return std::nullopt;
  return KernelVersion{*major, *minor};
}

std::optional<KernelVersion> running_kernel_version() {
  utsname names{};
  if (::uname(&names) != 0) return std::nullopt;
  return parse_kernel_release(names.release);
}

}  // namespace dormant
