// Prints the hash this process gives its argument, in hex: what the hash-flooding test compares
// from one process to the next.
#include <cinttypes>
#include <cstdio>

#include "profile/fast_hash.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: frame_hash_of NAME\n");
    return 2;
  }
  std::printf("%016" PRIx64 "\n", dormant::profile::fast_hash(std::string_view(argv[1])));
  return 0;
}
