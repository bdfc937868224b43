// The shared library of symbol_target.
volatile unsigned long library_sink;

__attribute__((noinline)) void library_work(void) {
  for (unsigned long i = 0; i < 2000000UL; ++i) library_sink += i;
}
