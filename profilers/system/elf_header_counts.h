// The section and program header counts an ELF file's header claims, read before the file is
// given to libelf: libelf allocates a few hundred bytes for every section the header names, so a
// sparse file claiming millions of sections would cost gigabytes before any check of ours ran.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace dormant::profilers::system {

struct ElfHeaderCounts {
  uint64_t sections = 0;
  uint64_t program_headers = 0;
};

// From the open file `fd` (named `name` in errors); an error where it is no ELF file.
Result<ElfHeaderCounts> read_elf_header_counts(int fd, const std::string& name);

}  // namespace dormant::profilers::system
