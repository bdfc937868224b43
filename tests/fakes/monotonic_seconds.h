// Seconds on the monotonic clock, for the fakes that run for a given time.
#ifndef DORMANT_TESTS_FAKES_MONOTONIC_SECONDS_H
#define DORMANT_TESTS_FAKES_MONOTONIC_SECONDS_H

#include <time.h>

static inline double monotonic_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
