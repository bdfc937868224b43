#include "server/storage/profile_files.h"

#include <algorithm>
#include <climits>
#include <system_error>

#include <zlib.h>

#include "common/atomic_file.h"
#include "server/storage/uuid.h"

namespace dormant::server::storage {
namespace {

constexpr int kGzipWindowBits = 15 + 16;  // 32 KiB window, gzip header and trailer
constexpr int kMemLevel = 8;
constexpr std::string_view kSuffix = ".col.gz";
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

bool is_profile_file(const std::string& name) {
  return name.size() > kSuffix.size() && name.ends_with(kSuffix) && name.front() != '.';
}

// write_file_atomically's temporary files: ".<name>.tmp.XXXXXX".
bool is_temporary_file(const std::string& name) {
  return name.front() == '.' && name.find(std::string(kSuffix) + ".tmp.") != std::string::npos;
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
  z_stream stream{};
  int code = inflateInit2(&stream, kGzipWindowBits);
  if (code != Z_OK) return zlib_error("starting gzip decompression", stream, code);
  // One byte more than expected, so that longer data shows as such.
  std::string out(expected_size + 1, '\0');
  std::string_view input = compressed;
  while (stream.total_out < out.size()) {
    if (stream.avail_in == 0) {
      if (input.empty()) break;
      feed(stream, input);
    }
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + stream.total_out);
    stream.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - stream.total_out, UINT_MAX));
    code = inflate(&stream, Z_NO_FLUSH);
    if (code != Z_OK) break;
  }
  if (code != Z_OK && code != Z_STREAM_END) {
    Error error = zlib_error("gzip decompression", stream, code);
    inflateEnd(&stream);
    return error;
  }
  size_t produced = stream.total_out;
  inflateEnd(&stream);
  if (code != Z_STREAM_END || produced != expected_size) {
    return Error::parse("gzip data holds " +
                        std::string(produced > expected_size ? "more" : "less") + " than the " +
                        std::to_string(expected_size) + " bytes expected");
  }
  out.resize(produced);
  return out;
}

Result<ProfileFiles::Written> ProfileFiles::write(std::string_view collapsed) const {
  auto compressed = gzip_compress(collapsed);
  if (!compressed) return std::move(compressed).take_error();
  Written written{random_uuid() + std::string(kSuffix), static_cast<int64_t>(compressed->size())};
  if (auto saved = write_file_atomically(path_of(written.file_name), *compressed, 0600); !saved) {
    return std::move(saved).take_error();
  }
  return written;
}

Result<std::string> ProfileFiles::read(const std::string& file_name, int64_t raw_size) const {
  if (!is_profile_file(file_name) || file_name.find('/') != std::string::npos) {
    return Error::parse("\"" + file_name + "\" is not the name of a profile file");
  }
  auto compressed = read_file(path_of(file_name));
  if (!compressed) return std::move(compressed).take_error();
  auto text = gzip_decompress(*compressed, static_cast<size_t>(raw_size));
  if (!text) return std::move(text).take_error().with_context(path_of(file_name).string());
  return text;
}

void ProfileFiles::remove(const std::string& file_name) const {
  std::error_code ignored;
  std::filesystem::remove(path_of(file_name), ignored);
}

Result<int> ProfileFiles::remove_unreferenced(const std::set<std::string>& referenced) const {
  std::error_code error;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    std::string name = entry.path().filename().string();
    bool stray = is_profile_file(name) ? !referenced.contains(name) : is_temporary_file(name);
    if (stray && std::filesystem::remove(entry.path(), error)) ++removed;
    if (error) return Error::from_errno("removing " + entry.path().string(), error.value());
  }
  if (error) return Error::from_errno("listing " + dir_.string(), error.value());
  return removed;
}

}  // namespace dormant::server::storage
