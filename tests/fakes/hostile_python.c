// A program that claims to be CPython 3.11 (its file name, Py_Version, _PyRuntime, PyCode_Type)
// but whose runtime is hostile: the interpreter's thread list and the main thread's frame chain
// are cycles, and its one code object's name says it is a terabyte long. It spins until killed:
//   python3.11 SECONDS   (built under that name in its own directory)
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "monotonic_seconds.h"

const unsigned int Py_Version = 0x030B02F0;  // 3.11.2 final
unsigned char PyCode_Type[256];
unsigned char _PyRuntime[4096];

static unsigned char interpreter[256];
static unsigned char threads[2][256];
static unsigned char cframe[64];
static unsigned char frames[2][128];
static unsigned char code[256];
static unsigned char name[128];

static void put(unsigned char* at, uint64_t value) { memcpy(at, &value, sizeof(value)); }

volatile unsigned long sink;

int main(int argc, char** argv) {
  // The offsets of profilers/system/python_runtime.cpp's 3.11 layout.
  put(_PyRuntime + 40, (uintptr_t)interpreter);
  put(interpreter + 16, (uintptr_t)threads[0]);
  put(threads[0] + 8, (uintptr_t)threads[1]);  // a cycle of two threads
  put(threads[1] + 8, (uintptr_t)threads[0]);
  put(threads[1] + 152, 12345);  // no thread's pthread_self()
  put(threads[0] + 152, (uintptr_t)pthread_self());
  put(threads[0] + 56, (uintptr_t)cframe);
  put(cframe + 8, (uintptr_t)frames[0]);
  for (int i = 0; i < 2; ++i) {
    put(frames[i] + 32, (uintptr_t)code);
    put(frames[i] + 48, (uintptr_t)frames[1 - i]);  // a cycle of two frames
  }
  put(code + 8, (uintptr_t)PyCode_Type);
  put(code + 128, (uintptr_t)name);                   // co_qualname
  put(code + 112, 0x10);                              // co_filename: an address no process maps
  put(name + 16, (uint64_t)1 << 40);                  // a terabyte of characters
  put(name + 32, (1u << 5) | (1u << 6) | (1u << 2));  // compact, ASCII, one byte each
  double end = monotonic_seconds() + (argc > 1 ? atof(argv[1]) : 5);
  while (monotonic_seconds() < end) {
    for (int i = 0; i < 100000; ++i) sink += i;
  }
  return (int)(sink & 1);
}
