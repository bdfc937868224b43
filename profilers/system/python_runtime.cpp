#include "profilers/system/python_runtime.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "profilers/system/elf_file.h"

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

// 11 from python3.11, python3.11d, libpython3.11.so.1.0; nullopt for any other file name.
std::optional<int> minor_from_name(const std::string& path) {
  std::string_view name(path);
  name.remove_prefix(name.rfind('/') == std::string_view::npos ? 0 : name.rfind('/') + 1);
  if (name.starts_with("lib")) name.remove_prefix(3);
  if (!name.starts_with("python3.")) return std::nullopt;
  name.remove_prefix(8);
  int minor = 0;
  size_t digits = 0;
  while (digits < name.size() && digits < 3 &&
         std::isdigit(static_cast<unsigned char>(name[digits]))) {
    minor = minor * 10 + (name[digits++] - '0');
  }
  if (digits == 0 || digits > 2) return std::nullopt;
  name.remove_prefix(digits);
  while (!name.empty() && std::islower(static_cast<unsigned char>(name.front()))) {
    name.remove_prefix(1);  // an ABI flag: d, m, t
  }
  if (name.empty()) return minor;
  if (!name.starts_with(".so")) return std::nullopt;
  name.remove_prefix(3);
  bool version_only = std::all_of(name.begin(), name.end(), [](char c) {
    return c == '.' || std::isdigit(static_cast<unsigned char>(c));
  });
  return version_only ? std::optional(minor) : std::nullopt;
}

}  // namespace

const PythonOffsets* python_offsets(int minor) { return minor == 11 ? &kPython311 : nullptr; }

bool PythonBinary::named_like_python(const std::string& path) {
  return minor_from_name(path).has_value();
}

Result<PythonBinary> PythonBinary::read(const std::filesystem::path& path,
                                        const std::string& name) {
  auto file = open_elf_file(path, name, "its Python frames are not read");
  if (!file) return file.error();
  Elf* elf = file->elf.get();
  PythonBinary binary;
  auto segments = LoadSegments::of(elf, name);
  if (!segments) return segments.error();
  binary.segments_ = std::move(*segments);
  uint64_t version_address = 0;
  for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
       section = elf_nextscn(elf, section)) {
    GElf_Shdr header;
    if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_DYNSYM) continue;
    Elf_Data* data = elf_getdata(section, nullptr);
    size_t entry = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    if (data == nullptr || entry == 0) break;
    size_t count = std::min<size_t>(data->d_size / entry, kMaxSymbols);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym symbol;
      if (gelf_getsym(data, static_cast<int>(i), &symbol) == nullptr || symbol.st_value == 0) {
        continue;
      }
      const char* symbol_name = elf_strptr(elf, header.sh_link, symbol.st_name);
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
  // Py_Version (3.11+): 0x030B02F0 is 3.11.2 final.
  if (auto at = binary.segments_.file_offset(version_address, 4); version_address != 0 && at) {
    uint32_t version = 0;
    if (::pread(file->fd.get(), &version, sizeof(version), static_cast<off_t>(*at)) ==
            sizeof(version) &&
        (version >> 24) == 3) {
      minor = static_cast<int>((version >> 16) & 0xff);
    }
  }
  if (!minor) return Error(ErrorKind::kUnavailable, name + ": no Python version to be read");
  binary.minor_ = *minor;
  return binary;
}

std::optional<uint64_t> PythonBinary::load_base(uint64_t start, uint64_t offset) const {
  auto bias = segments_.bias(start, offset);
  if (!bias) return std::nullopt;
  return *bias - segments_.base();
}

}  // namespace dormant::profilers::system
