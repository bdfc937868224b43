// Three functions spinning 1:2:3 units, reached only through glibc's qsort calling back into
// this program, built as Debian builds everything (-O2, no frame pointers):
//   no_frame_pointers SECONDS
// A frame-pointer walk stops inside qsort; only the binaries' call-frame information reaches
// main.
#include <stdlib.h>

#include "monotonic_seconds.h"

#define UNIT 200000UL

volatile unsigned long sink;

// The work itself, shared, so that a unit costs the same whoever asks for it.
__attribute__((noinline)) unsigned long burn(unsigned long units) {
  unsigned long sum = 0;
  for (unsigned long i = 0; i < units * UNIT; ++i) sum += i ^ sink;
  return sum;
}

// Each stores what it burnt: a call followed by work is no tail call, so each keeps its frame.
__attribute__((noinline)) void spin_alpha(void) { sink += burn(1); }
__attribute__((noinline)) void spin_beta(void) { sink += burn(2); }
__attribute__((noinline)) void spin_gamma(void) { sink += burn(3); }

static unsigned calls;

// Each call spins one of the three in turn, then compares.
static int compare(const void* a, const void* b) {
  switch (calls++ % 3) {
    case 0:
      spin_alpha();
      break;
    case 1:
      spin_beta();
      break;
    default:
      spin_gamma();
      break;
  }
  return *(const int*)a - *(const int*)b;
}

__attribute__((noinline)) void sort_pairs(double seconds) {
  double end = monotonic_seconds() + seconds;
  int values[2] = {2, 1};
  while (monotonic_seconds() < end) {
    qsort(values, 2, sizeof(values[0]), compare);
    values[0] = 2;
    values[1] = 1;
  }
}

int main(int argc, char** argv) {
  sort_pairs(argc > 1 ? atof(argv[1]) : 5);
  return (int)(sink & 1);
}
