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

}  // namespace dormant::profilers::system
