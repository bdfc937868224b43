// A pprof profile read back by a decoder that is not ours: Debian's `protoc --decode` against
// profile/pprof/profile.proto, its text output parsed into what tests compare.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dormant::testing {

struct DecodedPprof {
  std::vector<std::string> strings;  // the string table
  std::string sample_type;           // "type/unit" of the first sample type
  std::string period_type;           // "type/unit", empty when absent
  int64_t period = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  size_t locations = 0;
  size_t functions = 0;
  // Each sample as "label=value,...|root;...;leaf" (labels sorted by key) with its summed value.
  std::map<std::string, int64_t> stacks;
  std::string text;  // protoc's output, for failure messages
};

// `gzipped`: the bytes as served or written.
Result<DecodedPprof> decode_pprof(std::string_view gzipped);

}  // namespace dormant::testing
