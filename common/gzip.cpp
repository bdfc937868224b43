#include "common/gzip.h"

#include <algorithm>
#include <climits>

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

}  // namespace

GzipReader::GzipReader(std::string_view compressed, size_t limit)
    : input_(compressed), limit_(limit), code_(inflateInit2(&stream_, kGzipWindowBits)) {}

GzipReader::~GzipReader() { inflateEnd(&stream_); }

Result<size_t> GzipReader::read(char* out, size_t size) {
  if (code_ != Z_OK && code_ != Z_STREAM_END)
    return zlib_error("gzip decompression", stream_, code_);
  size = std::min(size, past_limit() ? 0 : limit_ + 1 - produced_);
  size_t got = 0;
  while (got < size) {
    if (code_ == Z_STREAM_END) {
      if (stream_.avail_in == 0 && input_.empty()) break;
      code_ = inflateReset(&stream_);
      if (code_ != Z_OK) return zlib_error("gzip decompression", stream_, code_);
    }
    if (stream_.avail_in == 0 && !input_.empty()) feed(stream_, input_);
    stream_.next_out = reinterpret_cast<Bytef*>(out + got);
    stream_.avail_out = static_cast<uInt>(std::min<size_t>(size - got, UINT_MAX));
    uInt room = stream_.avail_out;
    code_ = inflate(&stream_, Z_NO_FLUSH);
    got += room - stream_.avail_out;
    if (code_ == Z_BUF_ERROR && stream_.avail_in == 0 && input_.empty()) {
      return Error::parse("gzip data is truncated: it ends after " +
                          std::to_string(produced_ + got) +
                          " bytes, without the end of its stream");
    }
    if (code_ != Z_OK && code_ != Z_STREAM_END) {
      return zlib_error("gzip decompression", stream_, code_);
    }
  }
  produced_ += got;
  return got;
}

namespace {

// The whole gzip stream, or its first limit + 1 bytes when it holds more. The output grows as
// data comes, so a large limit costs nothing until the data needs it.
Result<std::string> inflate_up_to(std::string_view compressed, size_t limit) {
  GzipReader reader(compressed, limit);
  std::string out;
  size_t produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(std::min(limit + 1, std::max(out.size() * 2, kChunk)));
    auto got = reader.read(out.data() + produced, out.size() - produced);
    if (!got) return std::move(got).take_error();
    if (*got == 0) break;
    produced += *got;
  }
  out.resize(produced);
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
