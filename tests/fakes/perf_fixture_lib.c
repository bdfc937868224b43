// The shared library perf_fixture loads and deletes.
volatile unsigned long fixture_library_sink;

__attribute__((noinline)) void fixture_library_work(void) {
  for (int i = 0; i < 200000; ++i) fixture_library_sink = fixture_library_sink + (unsigned long)i;
}
