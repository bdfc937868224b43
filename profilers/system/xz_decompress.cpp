#include "profilers/system/xz_decompress.h"

#include <algorithm>

#include <lzma.h>

namespace dormant::profilers::system {

Result<std::string> xz_decompress(std::span<const uint8_t> compressed, size_t max_bytes) {
  constexpr uint64_t kDecoderMemory = 64 << 20;  // what the decoder's dictionary may take
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&stream, kDecoderMemory, 0) != LZMA_OK) {
    return Error::parse("cannot start an xz decoder");
  }
  std::string text(std::min(max_bytes, compressed.size() * 4 + 4096), '\0');
  stream.next_in = compressed.data();
  stream.avail_in = compressed.size();
  size_t produced = 0;
  for (;;) {
    if (produced == text.size()) {
      if (text.size() >= max_bytes) {
        lzma_end(&stream);
        return Error::parse("xz data inflates past " + std::to_string(max_bytes >> 20) + " MB");
      }
      text.resize(std::min(max_bytes, text.size() * 2));
    }
    stream.next_out = reinterpret_cast<uint8_t*>(text.data()) + produced;
    stream.avail_out = text.size() - produced;
    lzma_ret status = lzma_code(&stream, LZMA_FINISH);
    produced = text.size() - stream.avail_out;
    if (status == LZMA_STREAM_END) break;
    if (status != LZMA_OK) {
      lzma_end(&stream);
      return Error::parse("xz data is damaged (liblzma error " + std::to_string(status) + ")");
    }
  }
  lzma_end(&stream);
  text.resize(produced);
  return text;
}

Result<uint64_t> xz_declared_size(std::span<const uint8_t> compressed) {
  constexpr uint64_t kIndexMemory = 1 << 20;  // a single stream's index of a few blocks
  if (compressed.size() < 2 * LZMA_STREAM_HEADER_SIZE) return Error::parse("xz data is too short");
  lzma_stream_flags footer{};
  if (lzma_stream_footer_decode(
          &footer, compressed.data() + compressed.size() - LZMA_STREAM_HEADER_SIZE) != LZMA_OK ||
      footer.backward_size > compressed.size() - 2 * LZMA_STREAM_HEADER_SIZE) {
    return Error::parse("xz data ends without a stream footer");
  }
  lzma_index* index = nullptr;
  uint64_t memory = kIndexMemory;
  size_t position = 0;
  const uint8_t* at =
      compressed.data() + compressed.size() - LZMA_STREAM_HEADER_SIZE - footer.backward_size;
  if (lzma_index_buffer_decode(&index, &memory, nullptr, at, &position, footer.backward_size) !=
      LZMA_OK) {
    return Error::parse("xz data has no index that can be read");
  }
  uint64_t size = lzma_index_uncompressed_size(index);
  lzma_index_end(index, nullptr);
  return size;
}

}  // namespace dormant::profilers::system
