#include "tests/support/memory_meter.h"

#include <fstream>

#include "common/procfs.h"

#ifdef __SANITIZE_ADDRESS__
#include <atomic>
#include <cstddef>

// The sanitizer runtime's allocator interface; GCC installs no header for it.
extern "C" {
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                              void (*free_hook)(const volatile void*));
size_t __sanitizer_get_allocated_size(const volatile void* pointer);
}
#endif

namespace dormant::testing {

#ifdef __SANITIZE_ADDRESS__
namespace {

std::atomic<int64_t> live_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void on_malloc(const volatile void*, size_t size) {
  int64_t live = live_bytes.fetch_add(static_cast<int64_t>(size)) + static_cast<int64_t>(size);
  int64_t peak = peak_bytes.load();
  while (live > peak && !peak_bytes.compare_exchange_weak(peak, live)) {
  }
}

void on_free(const volatile void* pointer) {
  live_bytes.fetch_sub(static_cast<int64_t>(__sanitizer_get_allocated_size(pointer)));
}

// Installed as the program starts: a block allocated before would be subtracted when freed.
const int hooks_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);

// Signed: blocks allocated before the hooks and freed since make the count start below zero.
int64_t to_kb(int64_t bytes) { return bytes / 1024; }

}  // namespace

MemoryMeter::MemoryMeter() {
  static_cast<void>(hooks_installed);
  peak_bytes.store(live_bytes.load());
  start_kb_ = to_kb(live_bytes.load());
}

const char* MemoryMeter::measure() { return "heap bytes"; }

uint64_t MemoryMeter::peak_growth_kb() const {
  int64_t peak = to_kb(peak_bytes.load());
  return peak > start_kb_ ? static_cast<uint64_t>(peak - start_kb_) : 0;
}

int64_t MemoryMeter::held_kb() { return to_kb(live_bytes.load()); }

#else

MemoryMeter::MemoryMeter() {
  std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM back to VmRSS
  auto usage = procfs::memory_usage(0, false);
  start_kb_ = usage.ok() ? static_cast<int64_t>(usage->peak_rss_kb) : 0;
}

const char* MemoryMeter::measure() { return "VmHWM, USS"; }

uint64_t MemoryMeter::peak_growth_kb() const {
  auto usage = procfs::memory_usage(0, false);
  int64_t peak = usage.ok() ? static_cast<int64_t>(usage->peak_rss_kb) : 0;
  return peak > start_kb_ ? static_cast<uint64_t>(peak - start_kb_) : 0;
}

int64_t MemoryMeter::held_kb() {
  auto usage = procfs::memory_usage();
  return usage.ok() ? static_cast<int64_t>(usage->uss_kb) : 0;
}

#endif

}  // namespace dormant::testing
