// Gzip (RFC 1952) in memory, with bounds on what decompression may produce: compressed input
// comes from outside (uploads) and must not be able to expand without limit.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <zlib.h>

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

// Gzip data decompressed a piece at a time, for a reader that need not hold all of it: up to its
// first limit + 1 bytes (one past the limit shows that it holds more). Several members (RFC 1952
// 2.2) come out as their concatenation, as gunzip gives them.
class GzipReader {
 public:
  GzipReader(std::string_view compressed, size_t limit);
  ~GzipReader();
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Up to `size` more bytes into `out`; 0 at the end of the data or past the limit. Fails on
  // corrupt or truncated data.
  Result<size_t> read(char* out, size_t size);
  size_t produced() const { return produced_; }
  bool past_limit() const { return produced_ > limit_; }

 private:
  z_stream stream_{};
  std::string_view input_;
  const size_t limit_;
  size_t produced_ = 0;  // stream_.total_out starts again at each member
  int code_;             // zlib's last answer
};

}  // namespace dormant
