// Decompresses .xz data (liblzma), as MiniDebugInfo sections hold it, within a bound on what it
// may grow to: a small section that inflates without end is refused, not followed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/result.h"

namespace dormant::profilers::system {

Result<std::string> xz_decompress(std::span<const uint8_t> compressed, size_t max_bytes);

// What a single .xz stream says, in its index, it decompresses to: known before any of it is.
// The data itself may lie; xz_decompress() with this as its bound holds it to what it said.
Result<uint64_t> xz_declared_size(std::span<const uint8_t> compressed);

}  // namespace dormant::profilers::system
