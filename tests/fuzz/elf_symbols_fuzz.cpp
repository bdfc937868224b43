// libFuzzer target: an ELF file as any process may map one, loaded as the symbolizer loads it
// (from a file: here a memfd), then every address of its first segments looked up. Besides
// surviving any input, the loader must hold no more than the file's size allows.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "profilers/system/elf_symbols.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dormant::profilers::system::ElfSymbols;
  dormant::UniqueFd file(::memfd_create("elf_symbols_fuzz", MFD_CLOEXEC));
  if (!file) std::abort();
  if (size > 0 && ::write(file.get(), data, size) != static_cast<ssize_t>(size)) std::abort();
  auto symbols = ElfSymbols::load("/proc/self/fd/" + std::to_string(file.get()));
  if (!symbols) return 0;
  // Names, symbols, segments and build id come from the file, each at most its size (the build
  // id twice, in hex); the rest is small and fixed.
  const size_t loaded = (*symbols)->memory_bytes();
  if (loaded > 5 * size + 4096) std::abort();
  size_t lookups = 0;
  for (uint64_t offset = 0; offset < size; ++offset) {
    auto name = (*symbols)->function_at_file_offset(offset);
    if (name && (name->empty() || name->size() > ElfSymbols::kMaxNameBytes)) std::abort();
    lookups += name.has_value();
  }
  // Demangled names: a bounded cache, each name cut at kMaxNameBytes.
  if ((*symbols)->memory_bytes() >
      loaded + ElfSymbols::kMaxDemangledBytes + ElfSymbols::kMaxNameBytes + 64 * lookups) {
    std::abort();
  }
  return 0;
}
