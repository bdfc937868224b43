// A fast non-cryptographic hash of bytes, sixteen at a time, for the profile's interning tables.
// Keyed with a seed drawn at random when the process starts: names that collide in one process do
// not in another, so no profile can be made of names that all land in one slot (hash flooding).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace dormant::profile {
namespace fast_hash_detail {

constexpr uint64_t kMultiplier = 0x9E3779B97F4A7C15ULL;
constexpr uint64_t kFirstKey = 0x243F6A8885A308D3ULL;  // the fraction of pi: bits with no pattern
constexpr uint64_t kSecondKey = 0x13198A2E03707344ULL;

inline uint64_t load64(const char* bytes) {
  uint64_t word;
  std::memcpy(&word, bytes, 8);
  return word;
}

inline uint64_t load32(const char* bytes) {
  uint32_t word;
  std::memcpy(&word, bytes, 4);
  return word;
}

// Up to eight bytes as one word, with fixed-size loads only (a variable-size memcpy is a call).
// Every byte lands in the word, so equal words mean equal bytes.
inline uint64_t load_short(const char* bytes, size_t size) {
  if (size >= 4) return load32(bytes) | load32(bytes + size - 4) << 32;
  if (size == 0) return 0;
  auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])); };
  return byte(0) | byte(size / 2) << 8 | byte(size - 1) << 16;
}

// The 128-bit product folded to 64 bits: each input bit moves many output bits.
inline uint64_t fold_multiply(uint64_t a, uint64_t b) {
  unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

uint64_t draw_seed();  // from getrandom()

}  // namespace fast_hash_detail

// This process's seed: the same for every hash it makes, random from one process to the next.
inline uint64_t process_hash_seed() {
  static const uint64_t seed = fast_hash_detail::draw_seed();
  return seed;
}

// With `seed` 0, the hash of fixed keys that every process would share.
inline uint64_t fast_hash(const void* data, size_t size, uint64_t seed) {
  using namespace fast_hash_detail;
  const uint64_t first_key = kFirstKey ^ seed;
  const uint64_t second_key = kSecondKey ^ (seed * kMultiplier);
  const char* bytes = static_cast<const char*>(data);
  uint64_t h = size * kMultiplier ^ seed;
  size_t i = 0;
  for (; i + 16 < size; i += 16) {
    h = fold_multiply(load64(bytes + i) ^ first_key, load64(bytes + i + 8) ^ h);
  }
  // The last one to sixteen bytes as two words, which may overlap bytes already hashed.
  uint64_t first = 0, second = 0;
  if (size > 16) {
    first = load64(bytes + size - 16);
    second = load64(bytes + size - 8);
  } else if (size >= 8) {
    first = load64(bytes);
    second = load64(bytes + size - 8);
  } else {
    first = load_short(bytes, size);
  }
  return fold_multiply(first ^ first_key, second ^ h ^ second_key);
}

inline uint64_t fast_hash(const void* data, size_t size) {
  return fast_hash(data, size, process_hash_seed());
}

inline uint64_t fast_hash(std::string_view text) { return fast_hash(text.data(), text.size()); }

// Whether two byte ranges of `size` bytes are equal, in the same steps as fast_hash: for names a
// few dozen bytes long, quicker than a call to memcmp.
inline bool same_bytes(const char* a, const char* b, size_t size) {
  using namespace fast_hash_detail;
  auto differ = [&](size_t at) {
    return ((load64(a + at) ^ load64(b + at)) | (load64(a + at + 8) ^ load64(b + at + 8))) != 0;
  };
  for (size_t i = 0; i + 16 < size; i += 16) {
    if (differ(i)) return false;
  }
  if (size > 16) return !differ(size - 16);
  if (size >= 8) return load64(a) == load64(b) && load64(a + size - 8) == load64(b + size - 8);
  return load_short(a, size) == load_short(b, size);
}

}  // namespace dormant::profile
