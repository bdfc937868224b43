// A fast non-cryptographic hash of bytes, eight at a time, for the profile's interning tables.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dormant::profile {

inline uint64_t fast_hash(const void* data, size_t size) {
  constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ULL;
  const char* bytes = static_cast<const char*>(data);
  uint64_t h = size * kMultiplier;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = (h ^ word) * kMultiplier;
    h ^= h >> 32;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes + i, size - i);
  h = (h ^ tail) * kMultiplier;
  return h ^ (h >> 29);
}

inline uint64_t fast_hash(std::string_view text) { return fast_hash(text.data(), text.size()); }

}  // namespace dormant::profile
