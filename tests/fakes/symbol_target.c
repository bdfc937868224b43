// A PIE program that spends its time in a function of its own and in one of a shared library,
// for the symbolizer's tests; built once as is and once stripped.
//   symbol_target SECONDS
#include <stdlib.h>
#include <time.h>

void library_work(void);

volatile unsigned long program_sink;

__attribute__((noinline)) void program_work(void) {
  for (unsigned long i = 0; i < 2000000UL; ++i) program_sink += i;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
  double end = now() + (argc > 1 ? atof(argv[1]) : 3);
  while (now() < end) {
    program_work();
    library_work();
  }
  return (int)(program_sink & 1);
}
