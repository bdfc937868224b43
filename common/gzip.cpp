#include "common/gzip.h"

#include <algorithm>
#include <climits>

#include <zlib.h>

namespace dormant {
namespace {

constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip header and trailer
constexpr int kMemLevel = 8;
constexpr size_t kChunk = 256 * 1024;

Error zlib_error(std::string_view doing, const z_stream& stream, int code) {
  std::string message(doing);
  message += ": ";
  message += stream.msg != nullptr ? stream.msg : zError(code);
  return Error(code == Z_MEM_ERROR ? ErrorKind::kSystem : ErrorKind::kParse, std::move(message));
}

// zlib counts in uInt: feed at most that much at a time.
void feed(z_stream& stream, std::string_view& input) {
  size_t n = std::min<size_t>(input.size(), UINT_MAX);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
  stream.avail_in = static_cast<uInt>(n);
  input.remove_prefix(n);
}

// The whole gzip stream, or its first limit + 1 bytes when it holds more: one byte past the
// limit shows that the data is longer. The output grows as data comes, so a large limit costs
// nothing until the data needs it. A stream of several members (RFC 1952 2.2) comes out as their
// concatenation, as gunzip gives it.
Result<std::string> inflate_up_to(std::string_view compressed, size_t limit) {
  z_stream stream{};
  int code = inflateInit2(&stream, kGzipWindowBits);
  if (code != Z_OK) return zlib_error("starting gzip decompression", stream, code);
  std::string out;
  size_t produced = 0;  // stream.total_out starts again at each member
  std::string_view input = compressed;
  while (produced <= limit) {
    if (code == Z_STREAM_END) {
      if (stream.avail_in == 0 && input.empty()) break;
      code = inflateReset(&stream);
      if (code != Z_OK) break;
    }
    if (stream.avail_in == 0) {
      if (input.empty()) break;
      feed(stream, input);
    }
    if (produced == out.size()) out.resize(std::min(limit + 1, std::max(out.size() * 2, kChunk)));
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT_MAX));
    uInt room = stream.avail_out;
    code = inflate(&stream, Z_NO_FLUSH);
    produced += room - stream.avail_out;
    if (code != Z_OK && code != Z_STREAM_END) break;
  }
  if (code != Z_OK && code != Z_STREAM_END) {
    Error error = zlib_error("gzip decompression", stream, code);
    inflateEnd(&stream);
    return error;
  }
  inflateEnd(&stream);
  out.resize(produced);
  if (code != Z_STREAM_END && produced <= limit) {
    return Error::parse("gzip data is truncated: it ends after " + std::to_string(produced) +
                        " bytes, without the end of its stream");
  }
  return out;
}

}  // namespace

Result<std::string> gzip_compress(std::string_view data) {
  z_stream stream{};
  int code = deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, kMemLevel,
                          Z_DEFAULT_STRATEGY);
  if (code != Z_OK) return zlib_error("starting gzip compression", stream, code);
  std::string out(deflateBound(&stream, data.size()), '\0');
  std::string_view input = data;
  for (;;) {
    if (stream.avail_in == 0 && !input.empty()) feed(stream, input);
    if (stream.total_out == out.size()) out.resize(out.size() + kChunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + stream.total_out);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - stream.total_out, UINT_MAX));
    code = deflate(&stream, input.empty() ? Z_FINISH : Z_NO_FLUSH);
    if (code == Z_STREAM_END) break;
    if (code != Z_OK && code != Z_BUF_ERROR) {
      Error error = zlib_error("gzip compression", stream, code);
      deflateEnd(&stream);
      return error;
    }
  }
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

Result<std::string> gzip_decompress(std::string_view compressed, size_t expected_size) {
  auto out = inflate_up_to(compressed, expected_size);
  if (out && out->size() != expected_size) {
    return Error::parse("gzip data holds " +
                        std::string(out->size() > expected_size ? "more" : "less") + " than the " +
                        std::to_string(expected_size) + " bytes expected");
  }
  return out;
}

Result<std::string> gzip_decompress_at_most(std::string_view compressed, size_t max_size) {
  auto out = inflate_up_to(compressed, max_size);
  if (out && out->size() > max_size) {
    return Error::parse("gzip data holds more than " + std::to_string(max_size) + " bytes");
  }
  return out;
}

}  // namespace dormant
