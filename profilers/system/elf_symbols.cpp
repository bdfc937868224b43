#include "profilers/system/elf_symbols.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include "common/unique_fd.h"
#include "profilers/system/demangle.h"

namespace dormant::profilers::system {
namespace {

constexpr off_t kMaxElfBytes = off_t{2} << 30;

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using ElfHandle = std::unique_ptr<Elf, ElfCloser>;

std::string hex(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < size; ++i) {
    text.push_back(kDigits[bytes[i] >> 4]);
    text.push_back(kDigits[bytes[i] & 15]);
  }
  return text;
}

std::string read_build_id(Elf* elf, Elf_Scn* notes) {
  Elf_Data* data = elf_getdata(notes, nullptr);
  if (data == nullptr) return "";
  GElf_Nhdr note;
  size_t offset = 0, name_at = 0, desc_at = 0;
  while ((offset = gelf_getnote(data, offset, &note, &name_at, &desc_at)) > 0) {
    const char* name = static_cast<const char*>(data->d_buf) + name_at;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
      return hex(static_cast<const unsigned char*>(data->d_buf) + desc_at, note.n_descsz);
    }
  }
  (void)elf;
  return "";
}

std::string elf_error(const std::string& what) { return what + ": " + elf_errmsg(-1); }

}  // namespace

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::filesystem::path& path) {
  static std::once_flag initialised;
  std::call_once(initialised, [] { elf_version(EV_CURRENT); });
  // Files named by other processes: never block on a FIFO or a device, never map a file that
  // could shrink under us (SIGBUS).
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Error::from_errno("open(" + path.string() + ")");
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return Error::from_errno("fstat(" + path.string() + ")");
  if (!S_ISREG(info.st_mode)) return Error::parse(path.string() + " is not a regular file");
  if (info.st_size > kMaxElfBytes) {
    return Error::parse(path.string() + " is larger than " + std::to_string(kMaxElfBytes >> 20) +
                        " MB; its symbols are not read");
  }
  ElfHandle elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    return Error::parse(path.string() + " is not an ELF file");
  }
  std::unique_ptr<ElfSymbols> symbols(new ElfSymbols());

  size_t headers = 0;
  if (elf_getphdrnum(elf.get(), &headers) != 0) {
    return Error::parse(elf_error(path.string() + ": program headers"));
  }
  for (size_t i = 0; i < headers; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &header) == nullptr) continue;
    if (header.p_type != PT_LOAD) continue;
    symbols->segments_.push_back({header.p_offset, header.p_vaddr, header.p_filesz});
  }

  size_t section_names = 0;
  elf_getshdrstrndx(elf.get(), &section_names);
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  for (Elf_Scn* section = elf_nextscn(elf.get(), nullptr); section != nullptr;
       section = elf_nextscn(elf.get(), section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr) continue;
    if (header.sh_type == SHT_SYMTAB) symtab = section;
    if (header.sh_type == SHT_DYNSYM) dynsym = section;
    if (header.sh_type == SHT_NOTE && symbols->build_id_.empty()) {
      const char* name = elf_strptr(elf.get(), section_names, header.sh_name);
      if (name != nullptr && std::strcmp(name, ".note.gnu.build-id") == 0) {
        symbols->build_id_ = read_build_id(elf.get(), section);
      }
    }
  }
  Elf_Scn* table = symtab != nullptr ? symtab : dynsym;
  symbols->from_dynsym_ = symtab == nullptr && dynsym != nullptr;
  if (table != nullptr) {
    GElf_Shdr header;
    Elf_Data* data = elf_getdata(table, nullptr);
    if (gelf_getshdr(table, &header) != nullptr && data != nullptr && header.sh_entsize > 0) {
      size_t count = header.sh_size / header.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym symbol;
        if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr) continue;
        int type = GELF_ST_TYPE(symbol.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || symbol.st_value == 0) continue;
        if (symbol.st_shndx == SHN_UNDEF) continue;
        const char* name = elf_strptr(elf.get(), header.sh_link, symbol.st_name);
        if (name == nullptr || *name == 0) continue;
        size_t length = std::strlen(name);
        symbols->symbols_.push_back({symbol.st_value, symbol.st_size,
                                     static_cast<uint32_t>(symbols->names_.size()),
                                     static_cast<uint32_t>(length)});
        symbols->names_.append(name, length);
      }
    }
  }
  // Aliases share an address: the sort keeps one order, and lookups take the last of them.
  std::stable_sort(symbols->symbols_.begin(), symbols->symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  symbols->symbols_.shrink_to_fit();
  symbols->names_.shrink_to_fit();
  return symbols;
}

std::optional<std::string_view> ElfSymbols::function_at_file_offset(uint64_t file_offset) {
  const Segment* segment = nullptr;
  for (const Segment& candidate : segments_) {
    if (file_offset >= candidate.offset && file_offset < candidate.offset + candidate.size) {
      segment = &candidate;
      break;
    }
  }
  if (segment == nullptr) return std::nullopt;
  uint64_t address = file_offset - segment->offset + segment->address;
  auto after = std::upper_bound(
      symbols_.begin(), symbols_.end(), address,
      [](uint64_t wanted, const Symbol& symbol) { return wanted < symbol.address; });
  if (after == symbols_.begin()) return std::nullopt;
  const Symbol& symbol = *std::prev(after);
  if (symbol.size > 0 && address >= symbol.address + symbol.size) return std::nullopt;

  auto [cached, added] = demangled_.try_emplace(symbol.name_offset);
  if (added) {
    cached->second = demangle(names_.substr(symbol.name_offset, symbol.name_length));
  }
  return std::string_view(cached->second);
}

}  // namespace dormant::profilers::system
