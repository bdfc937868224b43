// A bucket's stacks as stored: (id, count) pairs by id, each an 8-byte little-endian id and the
// count as a LEB128 varint. Sorted, so that adding a profile to a bucket is one pass over both.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "server/storage/rollup_records.h"

namespace dormant::server::storage {

std::string encode_stacks(std::span<const StackCount> stacks);

// The pairs of `bytes`, or kInvalidArgument where they are cut short, out of order or overflow.
Result<std::vector<StackCount>> decode_stacks(std::string_view bytes);

// `into` and `added` summed, by id. An id `into` lacks is added while the sum holds fewer than
// `max_stacks` ids (kStacksPastCap not counted); past that its samples go to kStacksPastCap.
std::vector<StackCount> add_stacks(std::span<const StackCount> into,
                                   std::span<const StackCount> added, size_t max_stacks);

}  // namespace dormant::server::storage
