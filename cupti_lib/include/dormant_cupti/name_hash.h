// The hash that ends a kernel name cut to a bound ('#' and 16 hex digits), the same in the library
// and the agent: names that differ only past the cut never merge.
#ifndef DORMANT_CUPTI_NAME_HASH_H
#define DORMANT_CUPTI_NAME_HASH_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace dormant::cupti {

inline constexpr size_t kNameHashText = 1 + 16;  // '#' and the hash in hex

// FNV-1a, 64 bits.
inline uint64_t name_hash(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// `text` cut to `max_bytes` (at least kNameHashText + 1), its end the hash of `whole`; `text`
// itself if it fits.
inline std::string cut_name(std::string_view text, std::string_view whole, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::string cut(text.substr(0, max_bytes - kNameHashText));
  char hash[kNameHashText + 1];
  std::snprintf(hash, sizeof(hash), "#%016" PRIx64, name_hash(whole));
  return cut + hash;
}

}  // namespace dormant::cupti

#endif
