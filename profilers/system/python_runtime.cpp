#include "profilers/system/python_runtime.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <regex>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "profilers/system/elf_header_counts.h"

namespace dormant::profilers::system {
namespace {

// CPython 3.11: Include/internal/pycore_runtime.h (_PyRuntimeState), pycore_interp.h
// (PyInterpreterState), Include/cpython/pystate.h (PyThreadState, _PyCFrame),
// Include/internal/pycore_frame.h (_PyInterpreterFrame), Include/cpython/code.h (PyCodeObject),
// Include/cpython/unicodeobject.h (PyASCIIObject, PyCompactUnicodeObject); x86_64.
// tests/unit/python_runtime_test.cpp checks them against the installed headers.
constexpr PythonOffsets kPython311 = {
    .runtime_interpreters_head = 40,
    .interpreter_threads_head = 16,
    .thread_next = 8,
    .thread_pthread = 152,
    .thread_frame = 56,
    .cframe_current_frame = 8,
    .frame_code = 32,
    .frame_previous = 48,
    .frame_instruction = 56,
    .frame_is_entry = 68,
    .frame_owner = -1,
    .owned_by_c_stack = 0,
    .object_type = 8,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_first_line = 72,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,
    .unicode_compact_data = 72,
};

constexpr size_t kMaxSymbols = 4 << 20;
constexpr size_t kMaxSections = 1 << 16;
constexpr uint64_t kMaxFileBytes = uint64_t{2} << 30;

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};

std::optional<int> minor_from_name(const std::string& path) {
  static const std::regex kName(R"((?:^|/)(?:lib)?python3\.(\d{1,2})(?:[a-z]*)(?:\.so[.0-9]*)?$)");
  std::smatch match;
  if (!std::regex_search(path, match, kName)) return std::nullopt;
  return std::stoi(match[1].str());
}

}  // namespace

const PythonOffsets* python_offsets(int minor) { return minor == 11 ? &kPython311 : nullptr; }

bool PythonBinary::named_like_python(const std::string& path) {
  return minor_from_name(path).has_value();
}

Result<PythonBinary> PythonBinary::read(const std::filesystem::path& path,
                                        const std::string& name) {
  static std::once_flag initialised;
  std::call_once(initialised, [] { elf_version(EV_CURRENT); });
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) return Error::from_errno("open(" + name + ")");
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<uint64_t>(info.st_size) > kMaxFileBytes) {
    return Error::parse(name + " is not a regular file of a size an interpreter has");
  }
  auto counts = read_elf_header_counts(fd.get(), name);
  if (!counts) return counts.error();
  if (counts->sections > kMaxSections || counts->program_headers > kMaxSections) {
    return Error::parse(name + " claims more sections than a real ELF file has");
  }
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) return Error::parse(name + " is not ELF");

  PythonBinary binary;
  size_t headers = 0;
  if (elf_getphdrnum(elf.get(), &headers) != 0) return Error::parse(name + ": program headers");
  for (size_t i = 0; i < headers && i < kMaxSections; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &header) == nullptr) continue;
    if (header.p_type == PT_LOAD) {
      binary.segments_.push_back({header.p_offset, header.p_vaddr, header.p_filesz});
    }
  }
  uint64_t version_address = 0;
  for (Elf_Scn* section = elf_nextscn(elf.get(), nullptr); section != nullptr;
       section = elf_nextscn(elf.get(), section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    size_t entry = gelf_fsize(elf.get(), ELF_T_SYM, 1, EV_CURRENT);
    if (data == nullptr || entry == 0) break;
    size_t count = std::min<size_t>(data->d_size / entry, kMaxSymbols);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_value == 0) {
        continue;
      }
      const char* symbol_name = elf_strptr(elf.get(), header.sh_link, symbol.st_name);
      if (symbol_name == nullptr) continue;
      if (std::strcmp(symbol_name, "_PyRuntime") == 0) binary.runtime_ = symbol.st_value;
      if (std::strcmp(symbol_name, "PyCode_Type") == 0) binary.code_type_ = symbol.st_value;
      if (std::strcmp(symbol_name, "Py_Version") == 0) version_address = symbol.st_value;
    }
    break;
  }
  if (binary.runtime_ == 0 || binary.code_type_ == 0) {
    return Error(ErrorKind::kUnavailable, name + " exports no _PyRuntime: not a CPython 3.7+");
  }
  std::optional<int> minor = minor_from_name(name);
  for (const Segment& segment : binary.segments_) {  // Py_Version: 0x030B02F0 is 3.11.2 final
    if (version_address < segment.address || version_address + 4 > segment.address + segment.size) {
      continue;
    }
    uint32_t version = 0;
    off_t at = static_cast<off_t>(version_address - segment.address + segment.offset);
    if (::pread(fd.get(), &version, sizeof(version), at) == sizeof(version) &&
        (version >> 24) == 3) {
      minor = static_cast<int>((version >> 16) & 0xff);
    }
    break;
  }
  if (!minor) return Error(ErrorKind::kUnavailable, name + ": no Python version to be read");
  binary.minor_ = *minor;
  return binary;
}

std::optional<uint64_t> PythonBinary::load_base(uint64_t start, uint64_t offset) const {
  constexpr uint64_t kPage = 4096;
  for (const Segment& segment : segments_) {
    uint64_t first = segment.offset & ~(kPage - 1);
    if (offset < first || offset >= segment.offset + segment.size) continue;
    return start - (offset - segment.offset + segment.address);
  }
  return std::nullopt;
}

}  // namespace dormant::profilers::system
