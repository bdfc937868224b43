// The layouts of CPython's structures that a walk from the runtime state to a thread's frames
// and their names reads: offsets per minor version, x86_64. 3.9 to 3.12 are tables, each naming
// the headers its offsets come from; 3.13 says its own in `_Py_DebugOffsets`, at the start of
// `_PyRuntime`. Shared by the agent (profilers/ebpf, profilers/gpu) and libdormant_cupti.so, which
// walks its own thread's frames: nothing here needs more than the C++ library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace dormant::profilers::system {

struct PythonOffsets {
  // The walk from the runtime to a thread's innermost frame, and from frame to frame.
  uint16_t runtime_interpreters_head;
  uint16_t interpreter_threads_head;
  uint16_t thread_next;
  uint16_t thread_pthread;       // PyThreadState.thread_id: pthread_self(), the thread's fs base
  uint16_t thread_frame;         // to the thread's _PyCFrame, or to its frame where there is none
  int16_t cframe_current_frame;  // -1: thread_frame leads to the frame itself
  uint16_t frame_code;
  uint16_t frame_previous;
  uint16_t frame_instruction;
  int16_t frame_is_entry;  // 3.11: the frame an evaluation loop was entered with; -1: none
  int16_t frame_owner;     // 3.12+: a frame owned by the C stack marks an entry; -1: none
  uint8_t owned_by_c_stack;
  uint8_t every_frame_is_entry;  // before 3.11: each frame has an evaluation loop of its own
  // What names a frame.
  uint16_t object_type;
  uint16_t code_filename;
  uint16_t code_name;
  int16_t code_qualname;  // -1: none (before 3.11)
  uint16_t code_first_line;
  uint16_t unicode_length;
  uint16_t unicode_state;
  uint16_t unicode_ascii_data;    // sizeof(PyASCIIObject)
  uint16_t unicode_compact_data;  // sizeof(PyCompactUnicodeObject)
};

// The offsets kept for CPython 3.`minor`; null for a version we keep no table of.
const PythonOffsets* python_offsets(int minor);

// The bytes of CPython 3.13's `_Py_DebugOffsets` the walk reads (the first bytes of `_PyRuntime`).
inline constexpr size_t kPython313DebugOffsetsBytes = 71 * 8;

// CPython 3.13's offsets from its `_Py_DebugOffsets`; nullopt, with `problem` said, where they
// are not those of a 3.13 with the GIL or do not fit the walk.
std::optional<PythonOffsets> python313_offsets_from_debug(std::span<const uint8_t> debug_offsets,
                                                          std::string& problem);

// The layout of CPython 3.`minor`: the table kept for it, or, for 3.13, what `runtime_start` (the
// first kPython313DebugOffsetsBytes of its `_PyRuntime`, where the caller has them) says; nullopt,
// with `problem` said, for a version with neither.
std::optional<PythonOffsets> python_layout(int minor, std::span<const uint8_t> runtime_start,
                                           std::string& problem);

// Symbols only a debug or trace-refs build of CPython exports, whose objects' layout differs.
inline constexpr const char* kPythonDebugBuildSymbols[] = {"_Py_NegativeRefcount", "_Py_RefTotal",
                                                           "_Py_PrintReferences"};

}  // namespace dormant::profilers::system
