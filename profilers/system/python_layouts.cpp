#include "profilers/system/python_layouts.h"

#include <cstring>

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

std::optional<PythonOffsets> python313_offsets_from_debug(std::span<const uint8_t> debug_offsets,
                                                          std::string& problem) {
  static_assert(sizeof(DebugOffsets313) == kPython313DebugOffsetsBytes);
  DebugOffsets313 debug;
  if (debug_offsets.size() < sizeof(debug)) {
    problem = "_Py_DebugOffsets cut short";
    return std::nullopt;
  }
  std::memcpy(&debug, debug_offsets.data(), sizeof(debug));
  if (std::memcmp(debug.cookie, kDebugCookie, sizeof(kDebugCookie)) != 0) {
    problem = "no _Py_DebugOffsets cookie at _PyRuntime";
    return std::nullopt;
  }
  if ((debug.version >> 16) != 0x030d) {
    problem = "_Py_DebugOffsets of version " + std::to_string(debug.version >> 24) + "." +
              std::to_string((debug.version >> 16) & 0xff) + ", not 3.13";
    return std::nullopt;
  }
  if (debug.free_threaded != 0) {
    problem = "a free-threaded build, whose objects we do not read";
    return std::nullopt;
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
    problem = "_Py_DebugOffsets' " + misfit + " does not fit";
    return std::nullopt;
  }
  return offsets;
}

std::optional<PythonOffsets> python_layout(int minor, std::span<const uint8_t> runtime_start,
                                           std::string& problem) {
  if (const PythonOffsets* kept = python_offsets(minor)) return *kept;
  if (minor != 13) {
    problem = "no layout of Python 3." + std::to_string(minor) + " is known";
    return std::nullopt;
  }
  return python313_offsets_from_debug(runtime_start, problem);
}

}  // namespace dormant::profilers::system
