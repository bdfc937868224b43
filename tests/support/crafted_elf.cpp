#include "tests/support/crafted_elf.h"

#include <algorithm>
#include <cstring>

#include <elf.h>

namespace dormant::testing {
namespace {

template <typename T>
void put(std::string& bytes, size_t at, const T& value) {
  std::memcpy(bytes.data() + at, &value, sizeof(value));
}

}  // namespace

Elf64_Ehdr shared_object_header() {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_ident[EI_DATA] = ELFDATA2LSB;
  header.e_ident[EI_VERSION] = EV_CURRENT;
  header.e_type = ET_DYN;
  header.e_machine = EM_X86_64;
  header.e_version = EV_CURRENT;
  header.e_ehsize = sizeof(Elf64_Ehdr);
  return header;
}

std::string crafted_elf(const CraftedElf& elf) {
  const char kSectionNames[] = "\0.symtab\0.strtab\0.shstrtab";  // at 1, 9, 17
  const size_t phdr_at = sizeof(Elf64_Ehdr);
  const size_t strtab_at = phdr_at + sizeof(Elf64_Phdr);
  const size_t strtab_size = 1 + elf.name_bytes + (elf.unterminated ? 0 : 1);
  const size_t symtab_at = (strtab_at + strtab_size + 7) & ~size_t{7};
  const size_t symtab_size = (size_t{elf.symbols} + 1) * sizeof(Elf64_Sym);
  const size_t shstrtab_at = symtab_at + symtab_size;
  const size_t shdr_at = (shstrtab_at + sizeof(kSectionNames) + 7) & ~size_t{7};
  std::string bytes(shdr_at + 4 * sizeof(Elf64_Shdr), '\0');

  Elf64_Ehdr header = shared_object_header();
  header.e_phoff = phdr_at;
  header.e_shoff = shdr_at;
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = 1;
  header.e_shentsize = sizeof(Elf64_Shdr);
  header.e_shnum = 4;
  header.e_shstrndx = 3;
  put(bytes, 0, header);

  Elf64_Phdr load{};
  load.p_type = PT_LOAD;
  load.p_flags = PF_R | PF_X;
  // Past the end of a small file: the symbols' addresses (from 0x1000) are inside it all the same.
  load.p_filesz = load.p_memsz = std::max<uint64_t>(bytes.size(), 0x1000 + 16 * (elf.symbols + 1));
  load.p_align = 0x1000;
  put(bytes, phdr_at, load);

  std::memset(bytes.data() + strtab_at + 1, 'f', elf.name_bytes);
  for (uint32_t i = 0; i < elf.symbols; ++i) {
    Elf64_Sym symbol{};
    symbol.st_name = 1 + (elf.suffixes && elf.name_bytes > 0 ? i % elf.name_bytes : 0);
    symbol.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    symbol.st_shndx = 1;
    symbol.st_value = 0x1000 + uint64_t{i} * 16;
    symbol.st_size = 16;
    put(bytes, symtab_at + (size_t{i} + 1) * sizeof(Elf64_Sym), symbol);
  }
  std::memcpy(bytes.data() + shstrtab_at, kSectionNames, sizeof(kSectionNames));

  Elf64_Shdr symtab{};
  symtab.sh_name = 1;
  symtab.sh_type = SHT_SYMTAB;
  symtab.sh_offset = symtab_at;
  symtab.sh_size =
      elf.claimed_symbols > 0 ? (elf.claimed_symbols + 1) * sizeof(Elf64_Sym) : symtab_size;
  symtab.sh_link = 2;
  symtab.sh_info = 1;
  symtab.sh_addralign = 8;
  symtab.sh_entsize = sizeof(Elf64_Sym);
  put(bytes, shdr_at + sizeof(Elf64_Shdr), symtab);

  Elf64_Shdr strtab{};
  strtab.sh_name = 9;
  strtab.sh_type = SHT_STRTAB;
  strtab.sh_offset = strtab_at;
  strtab.sh_size = strtab_size;
  strtab.sh_addralign = 1;
  put(bytes, shdr_at + 2 * sizeof(Elf64_Shdr), strtab);

  Elf64_Shdr names{};
  names.sh_name = 17;
  names.sh_type = SHT_STRTAB;
  names.sh_offset = shstrtab_at;
  names.sh_size = sizeof(kSectionNames);
  names.sh_addralign = 1;
  put(bytes, shdr_at + 3 * sizeof(Elf64_Shdr), names);
  return bytes;
}

}  // namespace dormant::testing
