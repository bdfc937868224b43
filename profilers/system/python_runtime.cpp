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

// Each table: x86_64, the headers each group of offsets comes from in CPython's source tree.
// tests/unit/python_runtime_test.cpp checks every table against the headers of an installed
// CPython of that version, and 3.13's debug offsets against its headers, where there is one.

// CPython 3.9 and 3.10: Include/internal/pycore_runtime.h (_PyRuntimeState),
// Include/internal/pycore_interp.h (PyInterpreterState.tstate_head), Include/cpython/pystate.h
// (PyThreadState), Include/cpython/frameobject.h (PyFrameObject: one per evaluation loop),
// Include/cpython/code.h (PyCodeObject, no co_qualname yet), Include/cpython/unicodeobject.h
// (PyASCIIObject, PyCompactUnicodeObject, both with wstr).
constexpr PythonOffsets kPython39 = {
    .runtime_interpreters_head = 32,
    .interpreter_threads_head = 8,
    .thread_next = 8,
    .thread_pthread = 176,
    .thread_frame = 24,
    .cframe_current_frame = -1,
    .frame_code = 32,
    .frame_previous = 24,
    .frame_instruction = 104,  // f_lasti
    .frame_is_entry = -1,
    .frame_owner = -1,
    .owned_by_c_stack = 0,
    .every_frame_is_entry = 1,
    .object_type = 8,
    .code_filename = 104,
    .code_name = 112,
    .code_qualname = -1,
    .code_first_line = 40,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 48,
    .unicode_compact_data = 72,
};

constexpr PythonOffsets kPython310 = [] {
  PythonOffsets offsets = kPython39;
  offsets.frame_instruction = 96;  // f_lasti, after 3.10 moved f_stackdepth before it
  return offsets;
}();

// CPython 3.11: Include/internal/pycore_runtime.h (_PyRuntimeState), pycore_interp.h
// (PyInterpreterState), Include/cpython/pystate.h (PyThreadState, _PyCFrame),
// Include/internal/pycore_frame.h (_PyInterpreterFrame), Include/cpython/code.h (PyCodeObject),
// Include/cpython/unicodeobject.h (PyASCIIObject, PyCompactUnicodeObject).
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
    .every_frame_is_entry = 0,
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

// CPython 3.12: the same headers as 3.11; _PyInterpreterFrame.owner (FRAME_OWNED_BY_CSTACK, in
// pycore_frame.h) marks the frame each evaluation loop pushes before its first, and strings lost
// wstr.
constexpr uint8_t kFrameOwnedByCStack = 3;  // 3.12 and 3.13
constexpr PythonOffsets kPython312 = {
    .runtime_interpreters_head = 40,
    .interpreter_threads_head = 72,
    .thread_next = 8,
    .thread_pthread = 136,
    .thread_frame = 56,
    .cframe_current_frame = 0,
    .frame_code = 0,
    .frame_previous = 8,
    .frame_instruction = 56,
    .frame_is_entry = -1,
    .frame_owner = 70,
    .owned_by_c_stack = kFrameOwnedByCStack,
    .every_frame_is_entry = 0,
    .object_type = 8,
    .code_filename = 112,
    .code_name = 120,
    .code_qualname = 128,
    .code_first_line = 68,
    .unicode_length = 16,
    .unicode_state = 32,
    .unicode_ascii_data = 40,
    .unicode_compact_data = 56,
};

// CPython 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), as far as the walk reads
// it: for each structure its size, then the offsets of its members.
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version;  // PY_VERSION_HEX
  uint64_t free_threaded;
  struct {
    uint64_t size, finalizing, interpreters_head;
  } runtime_state;
  struct {
    uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked,
        gil_runtime_state_holder;
  } interpreter_state;
  struct {
    uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        status;
  } thread_state;
  struct {
    uint64_t size, previous, executable, instr_ptr, localsplus, owner;
  } interpreter_frame;
  struct {
    uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        localspluskinds, co_code_adaptive;
  } code_object;
  struct {
    uint64_t size, ob_type;
  } pyobject;
  struct {
    uint64_t size, tp_name, tp_repr, tp_flags;
  } type_object;
  struct {
    uint64_t size, ob_item, ob_size;
  } tuple_object, list_object;
  struct {
    uint64_t size, ma_keys, ma_values;
  } dict_object;
  struct {
    uint64_t size, ob_fval;
  } float_object;
  struct {
    uint64_t size, lv_tag, ob_digit;
  } long_object;
  struct {
    uint64_t size, ob_size, ob_sval;
  } bytes_object;
  struct {
    uint64_t size, state, length, asciiobject_size;
  } unicode_object;
};
constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
// PyCompactUnicodeObject is PyASCIIObject and then utf8_length and utf8 (3.12+).
constexpr uint64_t kCompactUnicodeExtra = 16;

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

const PythonOffsets* python_offsets(int minor) {
  switch (minor) {
    case 9:
      return &kPython39;
    case 10:
      return &kPython310;
    case 11:
      return &kPython311;
    case 12:
      return &kPython312;
    default:
      return nullptr;
  }
}

Result<PythonOffsets> python313_offsets_from_debug(std::span<const uint8_t> debug_offsets) {
  DebugOffsets313 debug;
  if (debug_offsets.size() < sizeof(debug)) {
    return Error(ErrorKind::kParse, "_Py_DebugOffsets cut short");
  }
  std::memcpy(&debug, debug_offsets.data(), sizeof(debug));
  if (std::memcmp(debug.cookie, kDebugCookie, sizeof(kDebugCookie)) != 0) {
    return Error(ErrorKind::kParse, "no _Py_DebugOffsets cookie at _PyRuntime");
  }
  if ((debug.version >> 16) != 0x030d) {
    return Error(ErrorKind::kUnavailable,
                 "_Py_DebugOffsets of version " + std::to_string(debug.version >> 24) + "." +
                     std::to_string((debug.version >> 16) & 0xff) + ", not 3.13");
  }
  if (debug.free_threaded != 0) {
    return Error(ErrorKind::kUnavailable, "a free-threaded build, whose objects we do not read");
  }
  // Every offset within its structure, and small enough for the sampler's 16-bit fields.
  std::string misfit;
  auto member = [&](uint64_t size, uint64_t offset, uint64_t width, const char* name) {
    if (offset > 0x7fff || offset + width > size) misfit = name;
    return static_cast<uint16_t>(offset);
  };
  const auto& runtime = debug.runtime_state;
  const auto& interpreter = debug.interpreter_state;
  const auto& thread = debug.thread_state;
  const auto& frame = debug.interpreter_frame;
  const auto& code = debug.code_object;
  const auto& unicode = debug.unicode_object;
  PythonOffsets offsets{};
  offsets.runtime_interpreters_head =
      member(runtime.size, runtime.interpreters_head, 8, "runtime_state.interpreters_head");
  offsets.interpreter_threads_head =
      member(interpreter.size, interpreter.threads_head, 8, "interpreter_state.threads_head");
  offsets.thread_next = member(thread.size, thread.next, 8, "thread_state.next");
  offsets.thread_pthread = member(thread.size, thread.thread_id, 8, "thread_state.thread_id");
  offsets.thread_frame = member(thread.size, thread.current_frame, 8, "thread_state.current_frame");
  offsets.cframe_current_frame = -1;
  offsets.frame_code = member(frame.size, frame.executable, 8, "interpreter_frame.executable");
  offsets.frame_previous = member(frame.size, frame.previous, 8, "interpreter_frame.previous");
  offsets.frame_instruction = member(frame.size, frame.instr_ptr, 8, "interpreter_frame.instr_ptr");
  offsets.frame_is_entry = -1;
  offsets.frame_owner =
      static_cast<int16_t>(member(frame.size, frame.owner, 1, "interpreter_frame.owner"));
  offsets.owned_by_c_stack = kFrameOwnedByCStack;
  offsets.every_frame_is_entry = 0;
  offsets.object_type = member(debug.pyobject.size, debug.pyobject.ob_type, 8, "pyobject.ob_type");
  offsets.code_filename = member(code.size, code.filename, 8, "code_object.filename");
  offsets.code_name = member(code.size, code.name, 8, "code_object.name");
  offsets.code_qualname =
      static_cast<int16_t>(member(code.size, code.qualname, 8, "code_object.qualname"));
  offsets.code_first_line = member(code.size, code.firstlineno, 4, "code_object.firstlineno");
  offsets.unicode_length = member(unicode.size, unicode.length, 8, "unicode_object.length");
  offsets.unicode_state = member(unicode.size, unicode.state, 4, "unicode_object.state");
  offsets.unicode_ascii_data =
      member(unicode.size, unicode.asciiobject_size, 0, "unicode_object.asciiobject_size");
  offsets.unicode_compact_data =
      static_cast<uint16_t>(offsets.unicode_ascii_data + kCompactUnicodeExtra);
  if (!misfit.empty()) {
    return Error(ErrorKind::kParse, "_Py_DebugOffsets' " + misfit + " does not fit");
  }
  return offsets;
}

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
  binary.read_layout(file->fd.get(), name);
  return binary;
}

void PythonBinary::read_layout(int fd, const std::string& name) {
  if (const PythonOffsets* kept = python_offsets(minor_)) {
    offsets_ = *kept;
    return;
  }
  if (minor_ != 13) {
    layout_error_ = "no layout of Python 3." + std::to_string(minor_) + " is known";
    return;
  }
  std::vector<uint8_t> debug_offsets(sizeof(DebugOffsets313));
  auto at = segments_.file_offset(runtime_, debug_offsets.size());
  if (!at || ::pread(fd, debug_offsets.data(), debug_offsets.size(), static_cast<off_t>(*at)) !=
                 static_cast<ssize_t>(debug_offsets.size())) {
    layout_error_ = name + ": _PyRuntime's _Py_DebugOffsets are not in the file";
    return;
  }
  auto offsets = python313_offsets_from_debug(debug_offsets);
  if (!offsets) {
    layout_error_ = name + ": " + offsets.error().message();
    return;
  }
  offsets_ = *offsets;
}

std::optional<uint64_t> PythonBinary::load_base(uint64_t start, uint64_t offset) const {
  auto bias = segments_.bias(start, offset);
  if (!bias) return std::nullopt;
  return *bias - segments_.base();
}

}  // namespace dormant::profilers::system
