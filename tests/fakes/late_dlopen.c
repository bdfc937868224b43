// Burns CPU in its own code for SECONDS_BEFORE, then loads LIBRARY with dlopen and burns CPU in
// its fixture_library_work() for SECONDS_AFTER: a library mapped seconds after the process was
// first sampled (and its maps first read).
//   late_dlopen SECONDS_BEFORE SECONDS_AFTER LIBRARY
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_before(void) {
  for (int i = 0; i < 200000; ++i) sink = sink + (unsigned long)i;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: late_dlopen SECONDS_BEFORE SECONDS_AFTER LIBRARY\n");
    return 2;
  }
  double until = now() + atof(argv[1]);
  while (now() < until) burn_before();
  void* library = dlopen(argv[3], RTLD_NOW);
  if (library == NULL) {
    fprintf(stderr, "late_dlopen: %s\n", dlerror());
    return 1;
  }
  void (*work)(void) = (void (*)(void))dlsym(library, "fixture_library_work");
  if (work == NULL) return 1;
  until = now() + atof(argv[2]);
  while (now() < until) work();
  return 0;
}
