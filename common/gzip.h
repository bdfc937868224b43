// Gzip (RFC 1952) in memory, with bounds on what decompression may produce: compressed input
// comes from outside (uploads) and must not be able to expand without limit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/result.h"

namespace dormant {

// At zlib's default level.
Result<std::string> gzip_compress(std::string_view data);

// Fails on corrupt or truncated input and when the data does not come out at exactly
// `expected_size` bytes.
Result<std::string> gzip_decompress(std::string_view compressed, size_t expected_size);

// Fails on corrupt or truncated input and when the data comes out longer than `max_size` bytes,
// having produced no more than max_size + 1 of them.
Result<std::string> gzip_decompress_at_most(std::string_view compressed, size_t max_size);

}  // namespace dormant
