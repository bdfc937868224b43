// An ELF file other users named (anything a process maps executable), opened for libelf with the
// checks every reader of such a file needs first: never block on a FIFO or a device, never map a
// file that could shrink under us (libelf reads it, ELF_C_READ), a size within `max_bytes`, and
// no more sections or program headers claimed than a real file has (libelf allocates for each
// before anything else is read).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gelf.h>

#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant::profilers::system {

struct ElfCloser {
  void operator()(Elf* elf) const;
};
using ElfHandle = std::unique_ptr<Elf, ElfCloser>;

struct OpenElf {
  UniqueFd fd;
  ElfHandle elf;
  uint64_t size = 0;
  std::vector<char> image;  // what elf reads, for an image in memory
};

// Asked, before a part of a file is read, for the memory reading it may hold at most (every copy
// and buffer until the part is done): true when it may be taken now. What was granted is the
// asker's to give back once the reading is over. Refused, the part is not read.
using MemoryGrant = std::function<bool(size_t bytes)>;

struct ElfFileLimits {
  uint64_t max_bytes = uint64_t{2} << 30;
  uint64_t max_sections = 1 << 16;
  uint64_t max_program_headers = 1 << 16;
  // Asked for what libelf holds of the file's headers, before it reads them; none: no bound.
  MemoryGrant grant;
};

// Opens `path`, named `name` in errors; `consequence` ends the errors of the checks ("its
// symbols are not read").
Result<OpenElf> open_elf_file(const std::filesystem::path& path, const std::string& name,
                              const std::string& consequence, const ElfFileLimits& limits = {});
// An ELF image in memory (the vDSO), copied: libelf may not read it in place.
Result<OpenElf> open_elf_image(std::span<const std::byte> image, const std::string& name);

// The first section named `wanted` (and its header), or null; null too where the section names
// take more than 1 MiB, which no real file's do.
Elf_Scn* find_section(Elf* elf, const char* wanted, GElf_Shdr& header);

// The values of those of `wanted` the file's .dynsym defines (a value not 0), by name; of the
// first `max_symbols` entries at most.
std::map<std::string, uint64_t, std::less<>> dynamic_symbols(
    Elf* elf, std::span<const std::string_view> wanted, size_t max_symbols = 4 << 20);

}  // namespace dormant::profilers::system
