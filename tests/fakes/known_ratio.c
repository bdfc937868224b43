// Two hot functions in a known CPU ratio: hot_two does twice the work of hot_one.
//   known_ratio SECONDS [PROGRAM ARGUMENTS...]
// and then, given a PROGRAM, becomes it (exec) in the same process.
// Built at -O0 with frame pointers (at -O1 GCC leaves them out of leaf functions even when told
// not to), so that every sample's stack is main -> hot_two|hot_one -> burn.
#include <stdlib.h>
#include <unistd.h>

#include "monotonic_seconds.h"

#define UNIT 2000000UL

volatile unsigned long sink;

__attribute__((noinline)) void burn(unsigned long iterations) {
  for (unsigned long i = 0; i < iterations; ++i) sink += i;
}

__attribute__((noinline)) void hot_two(void) { burn(2 * UNIT); }
__attribute__((noinline)) void hot_one(void) { burn(UNIT); }

int main(int argc, char** argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 5;
  double end = monotonic_seconds() + seconds;
  while (monotonic_seconds() < end) {
    hot_two();
    hot_one();
  }
  if (argc > 2) execv(argv[2], argv + 2);
  return (int)(sink & 1);
}
