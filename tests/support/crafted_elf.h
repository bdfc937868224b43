// ELF files written by hand for the tests of the ELF symbol loader: small files whose symbol
// table makes a careless loader use far more memory than the file is large.
#pragma once

#include <cstdint>
#include <string>

#include <elf.h>

namespace dormant::testing {

struct CraftedElf {
  uint32_t symbols = 4000;      // STT_FUNC symbols, 16 bytes apart from 0x1000
  uint32_t name_bytes = 98000;  // the length of the one name in .strtab they all refer to
  // Symbol i names the string from byte i % name_bytes of that name on (suffixes), so that no two
  // adjacent symbols share an st_name; otherwise they all name it whole.
  bool suffixes = false;
  // Symbols that .symtab claims (besides its null entry) but does not hold.
  uint64_t claimed_symbols = 0;  // 0: the real count
  // The name is not NUL-terminated: it runs up to the end of .strtab.
  bool unterminated = false;
};

// The file header of a 64-bit little-endian x86-64 shared object, its tables' places and counts
// left at zero.
Elf64_Ehdr shared_object_header();

// A 64-bit little-endian ELF shared object with one executable PT_LOAD covering the whole file
// (and every symbol's address), .symtab, .strtab and .shstrtab, as `elf` describes.
std::string crafted_elf(const CraftedElf& elf);

}  // namespace dormant::testing
