#include "profilers/system/elf_symbols.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/text.h"
#include "common/unique_fd.h"
#include "profilers/system/demangle.h"
#include "profilers/system/elf_file.h"
#include "profilers/system/xz_decompress.h"

namespace dormant::profilers::system {
namespace {

constexpr uint64_t kMaxElfBytes = uint64_t{2} << 30;

std::string read_build_id(Elf_Scn* notes) {
  Elf_Data* data = elf_getdata(notes, nullptr);
  if (data == nullptr) return "";
  GElf_Nhdr note;
  size_t offset = 0, name_at = 0, desc_at = 0;
  while ((offset = gelf_getnote(data, offset, &note, &name_at, &desc_at)) > 0) {
    const char* name = static_cast<const char*>(data->d_buf) + name_at;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
      return to_hex(
          std::string_view(static_cast<const char*>(data->d_buf) + desc_at, note.n_descsz));
    }
  }
  return "";
}

std::string elf_error(const std::string& what) { return what + ": " + elf_errmsg(-1); }

Result<void> read_fully(int fd, char* into, size_t size, uint64_t offset, const std::string& name) {
  while (size > 0) {
    ssize_t got = ::pread(fd, into, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Error::from_errno("read(" + name + ")");
    if (got == 0) return Error::parse(name + " ends inside its symbol tables");
    into += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return ok();
}

ElfFileLimits elf_file_limits(const MemoryGrant& grant) {
  ElfFileLimits limits;
  limits.max_bytes = kMaxElfBytes;
  limits.max_sections = ElfSymbols::kMaxSections;
  limits.max_program_headers = ElfSymbols::kMaxProgramHeaders;
  limits.grant = grant;
  return limits;
}

bool granted(const MemoryGrant& grant, size_t bytes) { return !grant || grant(bytes); }

std::string megabytes(size_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20); }

// A symbol table entry, of either class.
struct TableEntry {
  uint64_t name;
  uint64_t value;
  uint64_t size;
  unsigned char info;
  uint64_t section;
};

// Calls `visit` with each of the `count` entries of the table at `offset` of `fd`, read a chunk
// at a time and turned into this host's byte order by libelf (elf_getdata would keep a copy of
// the whole table until elf_end).
template <typename Sym, typename Visit>
Result<void> for_each_entry_as(Elf* elf, unsigned encoding, int fd, uint64_t offset, uint64_t count,
                               const std::string& name, Visit&& visit) {
  constexpr size_t kChunkEntries = 2048;
  const size_t entry_bytes = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  std::vector<char> raw(kChunkEntries * entry_bytes);
  std::vector<Sym> entries(kChunkEntries);
  for (uint64_t first = 0; first < count; first += kChunkEntries) {
    size_t chunk = std::min<uint64_t>(kChunkEntries, count - first);
    auto read = read_fully(fd, raw.data(), chunk * entry_bytes, offset + first * entry_bytes, name);
    if (!read) return read;
    Elf_Data from{};
    from.d_buf = raw.data();
    from.d_type = ELF_T_SYM;
    from.d_size = chunk * entry_bytes;
    from.d_version = EV_CURRENT;
    Elf_Data to = from;
    to.d_buf = entries.data();
    to.d_size = chunk * sizeof(Sym);
    if (gelf_xlatetom(elf, &to, &from, encoding) == nullptr) {
      return Error::parse(elf_error(name + ": symbol table"));
    }
    for (size_t i = 0; i < chunk; ++i) {
      const Sym& entry = entries[i];
      visit(
          TableEntry{entry.st_name, entry.st_value, entry.st_size, entry.st_info, entry.st_shndx});
    }
  }
  return ok();
}

template <typename Visit>
Result<void> for_each_entry(Elf* elf, int fd, uint64_t offset, uint64_t count,
                            const std::string& name, Visit&& visit) {
  const char* ident = elf_getident(elf, nullptr);
  if (ident == nullptr) return Error::parse(elf_error(name));
  const unsigned encoding = static_cast<unsigned char>(ident[EI_DATA]);
  if (gelf_getclass(elf) == ELFCLASS64) {
    return for_each_entry_as<Elf64_Sym>(elf, encoding, fd, offset, count, name, visit);
  }
  return for_each_entry_as<Elf32_Sym>(elf, encoding, fd, offset, count, name, visit);
}

// Whether an entry is a function defined in the file, with a name in a table of `names_bytes`.
bool is_function(const TableEntry& entry, uint64_t names_bytes) {
  int type = GELF_ST_TYPE(entry.info);
  return (type == STT_FUNC || type == STT_GNU_IFUNC) && entry.value != 0 &&
         entry.section != SHN_UNDEF && entry.name < names_bytes;
}

// The build id, from the note section named .note.gnu.build-id (of a size a real note has).
std::string find_build_id(Elf* elf) {
  GElf_Shdr header;
  Elf_Scn* notes = find_section(elf, ".note.gnu.build-id", header);
  if (notes == nullptr || header.sh_type != SHT_NOTE ||
      header.sh_size > ElfSymbols::kMaxBuildIdNoteBytes) {
    return "";
  }
  return read_build_id(notes);
}

// The file name a .gnu_debuglink section gives, if it names one a directory could hold.
std::string debug_link(Elf* elf) {
  constexpr size_t kMaxLinkBytes = 4096;
  GElf_Shdr header;
  Elf_Scn* link = find_section(elf, ".gnu_debuglink", header);
  Elf_Data* data =
      link == nullptr || header.sh_size > kMaxLinkBytes ? nullptr : elf_getdata(link, nullptr);
  if (data == nullptr || data->d_buf == nullptr || data->d_size > kMaxLinkBytes) return "";
  const char* text = static_cast<const char*>(data->d_buf);
  std::string name(text, strnlen(text, data->d_size));
  if (name.empty() || name.size() == data->d_size || name.find('/') != std::string::npos ||
      name == "." || name == "..") {
    return "";
  }
  return name;
}

}  // namespace

Result<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::filesystem::path& path,
                                                     const DebugFileSearch& debug,
                                                     const MemoryGrant& grant) {
  const std::string name = path.string();
  ElfFileLimits limits = elf_file_limits(grant);
  auto file = open_elf_file(path, name, "its symbols are not read", limits);
  if (!file) return file.error();
  Elf* elf = file->elf.get();
  try {
    std::unique_ptr<ElfSymbols> symbols(new ElfSymbols());

    size_t headers = 0;
    if (elf_getphdrnum(elf, &headers) != 0) {
      return Error::parse(elf_error(name + ": program headers"));
    }
    for (size_t i = 0; i < headers; ++i) {
      GElf_Phdr header;
      if (gelf_getphdr(elf, static_cast<int>(i), &header) == nullptr) continue;
      if (header.p_type != PT_LOAD) continue;
      symbols->segments_.push_back({header.p_offset, header.p_vaddr, header.p_filesz});
    }
    symbols->segments_.shrink_to_fit();
    symbols->build_id_ = find_build_id(elf);

    Elf_Scn* symtab = nullptr;
    Elf_Scn* dynsym = nullptr;
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) == nullptr) continue;
      if (header.sh_type == SHT_SYMTAB && symtab == nullptr) symtab = section;
      if (header.sh_type == SHT_DYNSYM && dynsym == nullptr) dynsym = section;
    }
    // .symtab where it can be read; else .dynsym, a file's exported functions, much smaller.
    Result<void> read = ok();
    for (Elf_Scn* table : {symtab, dynsym}) {
      if (table == nullptr) continue;
      read = symbols->read_table(elf, table, file->fd.get(), file->size, name, grant);
      if (read) {
        symbols->from_dynsym_ = table == dynsym;
        break;
      }
      if (table == symtab && dynsym != nullptr) {
        spdlog::warn("symbols: {}; its exported functions alone are named", read.error().message());
      }
      symbols->symbols_ = {};
      symbols->names_ = {};
    }
    if (symbols->from_dynsym_ || symtab == nullptr) symbols->read_debug_file(elf, debug, grant);
    if (symbols->from_dynsym_) symbols->add_mini_debug_info(elf, name, grant);
    if (!read && symbols->debug_file_.empty()) return read.error();
    return symbols;
  } catch (const std::bad_alloc&) {
    return Error::parse(name + ": out of memory reading its symbols; its frames stay unnamed");
  }
}

void ElfSymbols::read_debug_file(Elf* elf, const DebugFileSearch& search,
                                 const MemoryGrant& grant) {
  if (build_id_.size() < 4) return;  // without one, a debug file cannot be told from another's
  std::vector<std::filesystem::path> candidates = {
      search.root / ".build-id" / build_id_.substr(0, 2) / (build_id_.substr(2) + ".debug")};
  if (std::string link = debug_link(elf); !link.empty() && !search.binary.empty()) {
    std::filesystem::path directory = search.binary.parent_path();
    candidates.push_back(directory / link);
    candidates.push_back(directory / ".debug" / link);
    candidates.push_back(search.root / directory.relative_path() / link);
  }
  ElfFileLimits limits = elf_file_limits(grant);
  for (const auto& candidate : candidates) {
    std::error_code missing;
    if (!std::filesystem::exists(candidate, missing)) continue;
    auto debug = open_elf_file(candidate, candidate.string(), "its symbols are not read", limits);
    if (!debug || find_build_id(debug->elf.get()) != build_id_) continue;
    Elf_Scn* symtab = nullptr;
    for (Elf_Scn* section = elf_nextscn(debug->elf.get(), nullptr); section != nullptr;
         section = elf_nextscn(debug->elf.get(), section)) {
      GElf_Shdr header;
      if (gelf_getshdr(section, &header) != nullptr && header.sh_type == SHT_SYMTAB) {
        symtab = section;
        break;
      }
    }
    if (symtab == nullptr) continue;
    ElfSymbols from_debug;
    if (!from_debug.read_table(debug->elf.get(), symtab, debug->fd.get(), debug->size,
                               candidate.string(), grant)) {
      continue;
    }
    symbols_ = std::move(from_debug.symbols_);
    names_ = std::move(from_debug.names_);
    from_dynsym_ = false;
    debug_file_ = candidate;
    return;
  }
}

void ElfSymbols::add_mini_debug_info(Elf* elf, const std::string& name, const MemoryGrant& grant) {
  GElf_Shdr header;
  Elf_Scn* section = find_section(elf, ".gnu_debugdata", header);
  if (section == nullptr || header.sh_type == SHT_NOBITS ||
      header.sh_size > kMaxMiniDebugInfoBytes || !granted(grant, header.sh_size)) {
    return;
  }
  Elf_Data* data = elf_getdata(section, nullptr);  // libelf's copy, until the file is closed
  if (data == nullptr || data->d_buf == nullptr || data->d_size == 0) return;
  std::span compressed(static_cast<const uint8_t*>(data->d_buf), data->d_size);
  auto declared = xz_declared_size(compressed);
  if (!declared || *declared > kMaxMiniDebugInfoBytes) {
    spdlog::debug("{}: its .gnu_debugdata is not read: {}", name,
                  declared ? "it inflates past " + megabytes(kMaxMiniDebugInfoBytes) + " MB"
                           : declared.error().message());
    return;
  }
  // The image as it grows (to half again its size while the buffer doubles), then its copy in a
  // memory file.
  if (!granted(grant, 3 * *declared)) return;
  UniqueFd memory(::memfd_create("dormant-minidebuginfo", MFD_CLOEXEC));
  {
    auto image = xz_decompress(compressed, *declared);
    if (!image) {
      spdlog::debug("{}: its .gnu_debugdata is not read: {}", name, image.error().message());
      return;
    }
    // Read through a file, as every other ELF file is.
    if (!memory || ::write(memory.get(), image->data(), image->size()) !=
                       static_cast<ssize_t>(image->size())) {
      return;
    }
  }
  const std::string inner = name + " (.gnu_debugdata)";
  auto mini = open_elf_file("/proc/self/fd/" + std::to_string(memory.get()), inner,
                            "its symbols are not read", elf_file_limits(grant));
  if (!mini) return;
  Elf_Scn* symtab = nullptr;
  for (Elf_Scn* scan = elf_nextscn(mini->elf.get(), nullptr); scan != nullptr;
       scan = elf_nextscn(mini->elf.get(), scan)) {
    GElf_Shdr scanned;
    if (gelf_getshdr(scan, &scanned) != nullptr && scanned.sh_type == SHT_SYMTAB) symtab = scan;
  }
  ElfSymbols from_mini;
  if (symtab == nullptr ||
      !from_mini.read_table(mini->elf.get(), symtab, mini->fd.get(), mini->size, inner, grant) ||
      names_.size() + from_mini.names_.size() > kMaxNamesBytes) {
    return;
  }
  // Both tables as they are joined: the names and symbols grown, and the sort's buffer.
  size_t symbols = symbols_.size() + from_mini.symbols_.size();
  if (!granted(grant, names_.size() + from_mini.names_.size() + 2 * symbols * sizeof(Symbol))) {
    return;
  }
  const auto shift = static_cast<uint32_t>(names_.size());
  names_ += from_mini.names_;
  symbols_.reserve(symbols);
  for (Symbol symbol : from_mini.symbols_) {
    symbol.name_offset += shift;
    symbols_.push_back(symbol);
  }
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  with_mini_debug_info_ = true;
}

Result<void> ElfSymbols::read_table(Elf* elf, Elf_Scn* table, int fd, uint64_t file_size,
                                    const std::string& name, const MemoryGrant& grant) {
  GElf_Shdr header;
  size_t entry_bytes = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  if (gelf_getshdr(table, &header) == nullptr || entry_bytes == 0) {
    return Error::parse(elf_error(name + ": symbol table"));
  }
  uint64_t count = header.sh_size / entry_bytes;  // whatever sh_entsize says
  if (count > kMaxSymbols) {
    return Error::parse(name + " has " + std::to_string(count) + " symbols, more than the " +
                        std::to_string(kMaxSymbols) + " read from one file");
  }
  if ((header.sh_flags & SHF_COMPRESSED) != 0 || header.sh_offset > file_size ||
      header.sh_size > file_size - header.sh_offset) {
    return Error::parse(name + ": its symbol table is not in the file");
  }
  GElf_Shdr strings;
  Elf_Scn* strings_section = elf_getscn(elf, header.sh_link);
  if (strings_section == nullptr || gelf_getshdr(strings_section, &strings) == nullptr ||
      strings.sh_type != SHT_STRTAB || (strings.sh_flags & SHF_COMPRESSED) != 0 ||
      strings.sh_offset > file_size || strings.sh_size > file_size - strings.sh_offset) {
    return Error::parse(name + ": its symbol table has no string table in the file");
  }
  if (strings.sh_size > kMaxNamesBytes) {
    return Error::parse(name + " has " + std::to_string(strings.sh_size >> 20) +
                        " MB of symbol names, more than the " +
                        std::to_string(kMaxNamesBytes >> 20) + " MB read from one file");
  }
  // The functions are counted first, so that what reading them costs is known before it is
  // taken: the names, the symbols and the sort's buffer (half as large, in libstdc++).
  uint64_t functions = 0;
  auto counted = for_each_entry(
      elf, fd, header.sh_offset, count, name,
      [&](const TableEntry& entry) { functions += is_function(entry, strings.sh_size) ? 1 : 0; });
  if (!counted) return counted;
  size_t cost = strings.sh_size + 2 * functions * sizeof(Symbol);
  if (!granted(grant, cost)) {
    return Error::parse(name + "'s symbols would take " + megabytes(cost) +
                        " MB to read, more than the symbol cache can give");
  }
  names_.resize(strings.sh_size);
  if (auto got = read_fully(fd, names_.data(), names_.size(), strings.sh_offset, name); !got) {
    return got;
  }
  symbols_.reserve(functions);
  auto read = for_each_entry(elf, fd, header.sh_offset, count, name, [&](const TableEntry& entry) {
    // The file may have changed since the count: no more than were counted.
    if (!is_function(entry, names_.size()) || symbols_.size() == functions) return;
    size_t length =
        strnlen(names_.data() + entry.name,
                std::min(kMaxNameBytes, names_.size() - static_cast<size_t>(entry.name)));
    if (length == 0) return;
    symbols_.push_back({entry.value, entry.size, static_cast<uint32_t>(entry.name),
                        static_cast<uint32_t>(length)});
  });
  if (!read) return read;
  // Aliases share an address: the sort keeps one order, and lookups take the last of them.
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  symbols_.shrink_to_fit();
  return ok();
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

  if (demangled_bytes_ > kMaxDemangledBytes && !demangled_.contains(symbol.name_offset)) {
    demangled_.clear();
    demangled_bytes_ = 0;
  }
  auto [cached, added] = demangled_.try_emplace(symbol.name_offset);
  if (added) {
    cached->second = demangle(names_.substr(symbol.name_offset, symbol.name_length));
    if (cached->second.size() > kMaxNameBytes) cached->second.resize(kMaxNameBytes);
    cached->second.shrink_to_fit();
    demangled_bytes_ += cached->second.capacity();
  }
  return std::string_view(cached->second);
}

size_t ElfSymbols::memory_bytes() const {
  return sizeof(*this) + segments_.capacity() * sizeof(Segment) +
         symbols_.capacity() * sizeof(Symbol) + names_.capacity() + build_id_.capacity() +
         demangled_.size() * (sizeof(std::string) + 2 * sizeof(void*)) + demangled_bytes_;
}

}  // namespace dormant::profilers::system
