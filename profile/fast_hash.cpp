#include "profile/fast_hash.h"

#include <chrono>

#include <sys/random.h>

namespace dormant::profile::fast_hash_detail {

uint64_t draw_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), 0) == static_cast<ssize_t>(sizeof(seed))) return seed;
  // No getrandom (a kernel before 3.17): the clock and where ASLR put the stack and this code.
  const auto now =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const auto here = reinterpret_cast<uintptr_t>(&seed) ^ reinterpret_cast<uintptr_t>(&draw_seed);
  return fold_multiply(now ^ kFirstKey, here ^ kSecondKey);
}

}  // namespace dormant::profile::fast_hash_detail
