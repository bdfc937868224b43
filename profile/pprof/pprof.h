// A StackTable as a pprof profile (profile.proto, gzip'd as `go tool pprof` reads it): one value
// per sample, "samples"/"count"; one Function and one Location per distinct frame name; the
// container and the process name as labels of each sample.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"
#include "profile/stack_table.h"

namespace dormant::profile {

struct PprofOptions {
  // What one sample stands for: a period of 1e9 / frequency_hz nanoseconds of CPU. 0: unknown,
  // and the profile says nothing of the period.
  uint64_t frequency_hz = 0;
  int64_t time_nanos = 0;  // when the profile began, since the Unix epoch
  int64_t duration_nanos = 0;
};

Result<std::string> write_pprof(const StackTable& table, const PprofOptions& options);

}  // namespace dormant::profile
