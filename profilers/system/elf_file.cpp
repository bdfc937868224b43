#include "profilers/system/elf_file.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include <fcntl.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profilers/system/elf_header_counts.h"

namespace dormant::profilers::system {
namespace {

void initialise_libelf() {
  static std::once_flag initialised;
  std::call_once(initialised, [] { elf_version(EV_CURRENT); });
}

// What libelf holds for each section once its headers are read: its own record of the section
// (about 200 bytes in elfutils 0.188) and the header; and for each program header, the header.
constexpr uint64_t kBytesPerSection = 256 + sizeof(GElf_Shdr);
constexpr uint64_t kBytesPerProgramHeader = sizeof(GElf_Phdr);

}  // namespace

void ElfCloser::operator()(Elf* elf) const { elf_end(elf); }

Result<OpenElf> open_elf_file(const std::filesystem::path& path, const std::string& name,
                              const std::string& consequence, const ElfFileLimits& limits) {
  initialise_libelf();
  OpenElf file;
  file.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!file.fd) return Error::from_errno("open(" + name + ")");
  struct stat info {};
  if (::fstat(file.fd.get(), &info) != 0) return Error::from_errno("fstat(" + name + ")");
  if (!S_ISREG(info.st_mode)) return Error::parse(name + " is not a regular file");
  file.size = static_cast<uint64_t>(info.st_size);
  if (file.size > limits.max_bytes) {
    return Error::parse(name + " is larger than " + std::to_string(limits.max_bytes >> 20) +
                        " MB; " + consequence);
  }
  auto counts = read_elf_header_counts(file.fd.get(), name);
  if (!counts) return counts.error();
  if (counts->sections > limits.max_sections ||
      counts->program_headers > limits.max_program_headers) {
    return Error::parse(name + " claims " + std::to_string(counts->sections) + " sections and " +
                        std::to_string(counts->program_headers) +
                        " program headers, more than a real ELF file has; " + consequence);
  }
  uint64_t header_bytes =
      counts->sections * kBytesPerSection + counts->program_headers * kBytesPerProgramHeader;
  if (limits.grant && !limits.grant(header_bytes)) {
    return Error::parse(name + "'s " + std::to_string(counts->sections) +
                        " section headers would take more memory than is given to reading it; " +
                        consequence);
  }
  file.elf.reset(elf_begin(file.fd.get(), ELF_C_READ, nullptr));
  if (!file.elf || elf_kind(file.elf.get()) != ELF_K_ELF) {
    return Error::parse(name + " is not an ELF file");
  }
  return file;
}

Result<OpenElf> open_elf_image(std::span<const std::byte> image, const std::string& name) {
  initialise_libelf();
  OpenElf file;
  file.image.assign(reinterpret_cast<const char*>(image.data()),
                    reinterpret_cast<const char*>(image.data()) + image.size());
  file.size = image.size();
  file.elf.reset(elf_memory(file.image.data(), file.image.size()));
  if (!file.elf || elf_kind(file.elf.get()) != ELF_K_ELF) {
    return Error::parse(name + " is not an ELF image");
  }
  return file;
}

Elf_Scn* find_section(Elf* elf, const char* wanted, GElf_Shdr& header) {
  constexpr uint64_t kMaxSectionNamesBytes = 1 << 20;
  size_t names_index = 0;
  if (elf_getshdrstrndx(elf, &names_index) != 0) return nullptr;
  GElf_Shdr names_header;
  Elf_Scn* names = elf_getscn(elf, names_index);
  if (names == nullptr || gelf_getshdr(names, &names_header) == nullptr ||
      names_header.sh_size > kMaxSectionNamesBytes) {
    return nullptr;
  }
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    if (gelf_getshdr(section, &header) == nullptr) continue;
    const char* name = elf_strptr(elf, names_index, header.sh_name);
    if (name != nullptr && std::strcmp(name, wanted) == 0) return section;
  }
  return nullptr;
}

std::map<std::string, uint64_t, std::less<>> dynamic_symbols(
    Elf* elf, std::span<const std::string_view> wanted, size_t max_symbols) {
  std::map<std::string, uint64_t, std::less<>> found;
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    size_t entry = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    if (data == nullptr || entry == 0) break;
    size_t count = std::min<size_t>(data->d_size / entry, max_symbols);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_value == 0) {
        continue;
      }
      const char* name = elf_strptr(elf, header.sh_link, symbol.st_name);
      if (name == nullptr) continue;
      if (std::find(wanted.begin(), wanted.end(), std::string_view(name)) != wanted.end()) {
        found.emplace(name, symbol.st_value);
      }
    }
    break;
  }
  return found;
}

}  // namespace dormant::profilers::system
