// What the agent needs to know of a CPython interpreter binary to find a thread's Python frames
// and name them: where the interpreter's runtime state is (`_PyRuntime`), its version, and the
// layout of the structures walked from there (python_layouts.h; 3.13's read from the file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "profilers/system/python_layouts.h"
#include "profilers/system/unwind_table.h"

namespace dormant::profilers::system {

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
