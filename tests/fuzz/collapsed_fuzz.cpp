// libFuzzer target: a collapsed profile as an agent uploads it. What the reader accepts must
// write back to text that reads to the same profile.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "profile/collapsed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto profile = dormant::profile::read_collapsed(text);
  if (!profile.ok()) {
    if (profile.error().message().empty()) std::abort();  // every refusal says why
    return 0;
  }
  std::string written = dormant::profile::write_collapsed(profile->stacks, profile->header);
  auto again = dormant::profile::read_collapsed(written);
  if (!again.ok()) std::abort();
  if (dormant::profile::write_collapsed(again->stacks, again->header) != written) std::abort();
  return 0;
}
