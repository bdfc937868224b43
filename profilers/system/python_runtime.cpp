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
  std::vector<std::string_view> wanted = {"_PyRuntime", "PyCode_Type", "Py_Version"};
  wanted.insert(wanted.end(), std::begin(kPythonDebugBuildSymbols),
                std::end(kPythonDebugBuildSymbols));
  auto symbols = dynamic_symbols(elf, wanted, kMaxSymbols);
  auto value = [&](std::string_view name) {
    auto found = symbols.find(name);
    return found == symbols.end() ? uint64_t{0} : found->second;
  };
  binary.runtime_ = value("_PyRuntime");
  binary.code_type_ = value("PyCode_Type");
  uint64_t version_address = value("Py_Version");
  bool debug_build =
      std::any_of(std::begin(kPythonDebugBuildSymbols), std::end(kPythonDebugBuildSymbols),
                  [&](const char* name) { return value(name) != 0; });
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
  if (debug_build) {
    binary.layout_error_ = name + " is a debug build of CPython, whose objects' layout differs";
  } else {
    binary.read_layout(file->fd.get(), name);
  }
  return binary;
}

void PythonBinary::read_layout(int fd, const std::string& name) {
  std::vector<uint8_t> runtime_start(kPython313DebugOffsetsBytes);
  auto at = segments_.file_offset(runtime_, runtime_start.size());
  if (!at || ::pread(fd, runtime_start.data(), runtime_start.size(), static_cast<off_t>(*at)) !=
                 static_cast<ssize_t>(runtime_start.size())) {
    runtime_start.clear();  // not in the file (a .bss _PyRuntime): only a kept table will do
  }
  std::string problem;
  offsets_ = python_layout(minor_, runtime_start, problem);
  if (!offsets_) layout_error_ = name + ": " + problem;
}

std::optional<uint64_t> PythonBinary::load_base(uint64_t start, uint64_t offset) const {
  auto bias = segments_.bias(start, offset);
  if (!bias) return std::nullopt;
  return *bias - segments_.base();
}

}  // namespace dormant::profilers::system
