// A program whose stacks hold everything a perf script parser gets wrong: a process name with
// spaces and parentheses, C++ operators with '+', an anonymous namespace, a very long template
// name, JIT code named through a perf map (names with ';' and spaces), and a function in a
// shared library deleted while it runs. tests/unit/data/perf_script_fixture.txt was recorded from
// it.
//   perf_fixture SECONDS LIBRARY.so
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

volatile unsigned long sink;

namespace {
[[gnu::noinline]] void anonymous_work() {
  for (int i = 0; i < 200000; ++i) sink = sink + static_cast<unsigned long>(i);
}
}  // namespace

struct Vec {
  unsigned long value;
  [[gnu::noinline]] Vec operator+(const Vec& other) const {
    for (int i = 0; i < 200000; ++i) sink = sink + value;
    return {value + other.value};
  }
  [[gnu::noinline]] Vec& operator+=(const Vec& other) {
    for (int i = 0; i < 200000; ++i) sink = sink + other.value;
    value += other.value;
    return *this;
  }
};

template <typename A, typename B, typename C>
struct Nest {};
template <typename T>
[[gnu::noinline]] void long_named_work() {
  for (int i = 0; i < 200000; ++i) sink = sink + 1;
}
using Deep =
    Nest<Nest<Nest<int, long, char>, Nest<short, float, double>, Nest<unsigned, bool, void*>>,
         Nest<Nest<int, int, int>, Nest<long, long, long>, Nest<char, char, char>>,
         Nest<Nest<Vec, Vec, Vec>, Nest<Vec*, Vec*, Vec*>, Nest<int*, long*, char*>>>;

// "JIT" code: a copy of a tiny loop in an anonymous executable mapping, named in /tmp/perf-PID.map.
using JitFunction = void (*)(unsigned long);
JitFunction make_jit_function() {
  // mov rcx, rdi; loop: dec rcx; jnz loop; ret
  const unsigned char code[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
  void* page =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::memcpy(page, code, sizeof(code));
  std::string map_path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  FILE* map = std::fopen(map_path.c_str(), "w");
  std::fprintf(map, "%lx %zx Lcom/example/Jit;run(I)V with spaces\n",
               reinterpret_cast<unsigned long>(page), sizeof(code));
  std::fclose(map);
  return reinterpret_cast<JitFunction>(page);
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  int seconds = std::atoi(argv[1]);
  prctl(PR_SET_NAME, "my worker (1)");

  // Load the library from a private copy, then delete the copy: its frames show "(deleted)".
  std::string copy = "/tmp/perf_fixture_lib_" + std::to_string(getpid()) + ".so";
  std::filesystem::copy_file(argv[2], copy, std::filesystem::copy_options::overwrite_existing);
  void* library = dlopen(copy.c_str(), RTLD_NOW);
  if (library == nullptr) return 3;
  std::filesystem::remove(copy);
  auto library_work = reinterpret_cast<void (*)()>(dlsym(library, "fixture_library_work"));
  JitFunction jit = make_jit_function();

  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  Vec a{1}, b{2};
  while (std::chrono::steady_clock::now() < end) {
    anonymous_work();
    a = a + b;
    a += b;
    long_named_work<Deep>();
    jit(200000);
    library_work();
  }
  return static_cast<int>(sink & 1);
}
