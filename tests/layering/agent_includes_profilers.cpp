// Must not compile: the idle agent reaches the profilers only through module/api.
#include "profilers/perf/perf_profiler.h"
