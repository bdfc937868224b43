#include "profilers/system/elf_header_counts.h"

#include <bit>
#include <cstring>

#include <elf.h>
#include <unistd.h>

namespace dormant::profilers::system {
namespace {

template <typename T>
T in_host_order(T value, bool swapped) {
  if (!swapped) return value;
  if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(value));
  if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(value));
  if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(value));
  return value;
}

template <typename T>
bool read_at(int fd, uint64_t offset, T& value) {
  return ::pread(fd, &value, sizeof(value), static_cast<off_t>(offset)) ==
         static_cast<ssize_t>(sizeof(value));
}

// Past 0xffff sections or 0xfffe program headers, the header says 0 or PN_XNUM and the real
// counts are in the first section header (elf(5)).
template <typename Ehdr, typename Shdr>
Result<ElfHeaderCounts> counts(int fd, const std::string& name, bool swapped) {
  Ehdr header;
  if (!read_at(fd, 0, header)) return Error::parse(name + " is not an ELF file");
  ElfHeaderCounts counts;
  counts.sections = in_host_order(header.e_shnum, swapped);
  counts.program_headers = in_host_order(header.e_phnum, swapped);
  uint64_t sections_at = in_host_order(header.e_shoff, swapped);
  bool extended = counts.program_headers == PN_XNUM || (counts.sections == 0 && sections_at != 0);
  if (!extended) return counts;
  Shdr first;
  if (sections_at == 0 || !read_at(fd, sections_at, first)) {
    return Error::parse(name + ": its ELF header points at a section header it does not hold");
  }
  if (counts.sections == 0) counts.sections = in_host_order(first.sh_size, swapped);
  if (counts.program_headers == PN_XNUM) {
    counts.program_headers = in_host_order(first.sh_info, swapped);
  }
  return counts;
}

}  // namespace

Result<ElfHeaderCounts> read_elf_header_counts(int fd, const std::string& name) {
  unsigned char ident[EI_NIDENT];
  if (!read_at(fd, 0, ident) || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return Error::parse(name + " is not an ELF file");
  }
  bool little = ident[EI_DATA] == ELFDATA2LSB;
  if (!little && ident[EI_DATA] != ELFDATA2MSB) return Error::parse(name + " is not an ELF file");
  bool swapped = little != (std::endian::native == std::endian::little);
  if (ident[EI_CLASS] == ELFCLASS64) return counts<Elf64_Ehdr, Elf64_Shdr>(fd, name, swapped);
  if (ident[EI_CLASS] == ELFCLASS32) return counts<Elf32_Ehdr, Elf32_Shdr>(fd, name, swapped);
  return Error::parse(name + " is not an ELF file");
}

}  // namespace dormant::profilers::system
