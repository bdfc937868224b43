// What the eBPF sampler needs to know of a CPython interpreter to find a thread's Python frames
// and name them: where the interpreter's runtime state is (`_PyRuntime`), its version, and the
// offsets of the structures walked from there. CPython's layouts differ between minor versions:
// 3.9 to 3.12 are tables here, each naming the headers its offsets come from; 3.13 says its own
// in `_Py_DebugOffsets`, at the start of `_PyRuntime`, read from the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/result.h"
#include "profilers/system/unwind_table.h"

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

// CPython 3.13's offsets from its `_Py_DebugOffsets` (the first bytes of `_PyRuntime`); an error
// where they are not those of a 3.13 with the GIL or do not fit the walk.
Result<PythonOffsets> python313_offsets_from_debug(std::span<const uint8_t> debug_offsets);

// A CPython interpreter binary: the executable it is statically linked into, or libpython.
class PythonBinary {
 public:
  // Whether `path`'s file name is an interpreter's or libpython's (python3.11,
  // libpython3.11.so.1.0).
  static bool named_like_python(const std::string& path);
  // Reads the file's version (Py_Version, 3.11+, else its name), the addresses of `_PyRuntime`
  // and `PyCode_Type`, and its layout. An error: not a CPython.
  static Result<PythonBinary> read(const std::filesystem::path& path, const std::string& name);

  int minor() const { return minor_; }
  uint64_t runtime_address() const { return runtime_; }  // in the file
  uint64_t code_type_address() const { return code_type_; }
  // The layout of its structures; null for a version we have none of (said in layout_error()).
  const PythonOffsets* offsets() const { return offsets_ ? &*offsets_ : nullptr; }
  const std::string& layout_error() const { return layout_error_; }
  // Where a mapping at `start` of the file from `offset` puts the file's address 0; nullopt when
  // no load segment is at that offset.
  std::optional<uint64_t> load_base(uint64_t start, uint64_t offset) const;

 private:
  void read_layout(int fd, const std::string& name);

  int minor_ = 0;
  uint64_t runtime_ = 0;
  uint64_t code_type_ = 0;
  std::optional<PythonOffsets> offsets_;
  std::string layout_error_;
  LoadSegments segments_;
};

}  // namespace dormant::profilers::system
