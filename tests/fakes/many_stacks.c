// As many distinct stacks as the caller asks for: each pass goes down LEVELS calls, to left() or
// right() by the bits of a counter, and burns a little at the bottom; 2^LEVELS paths in all.
//   many_stacks SECONDS LEVELS
// Built like known_ratio (-O0, frame pointers, no sibling calls), so every path is its own stack.
#include <stdlib.h>

#include "monotonic_seconds.h"

volatile unsigned long sink;

__attribute__((noinline)) void burn(void) {
  for (unsigned long i = 0; i < 20000; ++i) sink += i;
}

void left(int level, unsigned path);
void right(int level, unsigned path);

static inline __attribute__((always_inline)) void down(int level, unsigned path) {
  if (level == 0) {
    burn();
  } else if (path & 1) {
    left(level - 1, path >> 1);
  } else {
    right(level - 1, path >> 1);
  }
}

__attribute__((noinline)) void left(int level, unsigned path) { down(level, path); }
__attribute__((noinline)) void right(int level, unsigned path) { down(level, path); }

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 5;
  int levels = argc > 2 ? atoi(argv[2]) : 10;
  if (levels < 0 || levels > 20) return 2;
  double end = monotonic_seconds() + seconds;
  for (unsigned path = 0; monotonic_seconds() < end; ++path)
    down(levels, path & ((1u << levels) - 1));
  return (int)(sink & 1);
}
