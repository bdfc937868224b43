#include "cupti_lib/src/python_stacks.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include <dlfcn.h>

#include "dormant_cupti/probes.h"

#include "profilers/system/python_layouts.h"

namespace dormant::cupti {
namespace {

using profilers::system::PythonOffsets;

struct Interpreter {
  PythonOffsets offsets{};
  void* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
};

std::optional<Interpreter> g_python;  // written once, under g_find_once, before any capture
std::once_flag g_find_once;

void* exported(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// 3.`minor`: from Py_Version (3.11+), else from the text Py_GetVersion gives ("3.9.18 (main, …").
int minor_version() {
  if (const auto* version = static_cast<const uint32_t*>(exported("Py_Version"))) {
    return (*version >> 24) == 3 ? static_cast<int>((*version >> 16) & 0xff) : -1;
  }
  auto version_text = reinterpret_cast<const char* (*)()>(exported("Py_GetVersion"));
  const char* text = version_text != nullptr ? version_text() : nullptr;
  if (text == nullptr || std::strncmp(text, "3.", 2) != 0) return -1;
  int minor = 0;
  for (const char* digit = text + 2; *digit >= '0' && *digit <= '9' && minor < 1000; ++digit) {
    minor = minor * 10 + (*digit - '0');
  }
  return minor;
}

std::optional<Interpreter> find_interpreter() {
  const auto* runtime = static_cast<const uint8_t*>(exported("_PyRuntime"));
  Interpreter python;
  python.this_thread_state =
      reinterpret_cast<void* (*)()>(exported("PyGILState_GetThisThreadState"));
  if (runtime == nullptr || python.this_thread_state == nullptr) return std::nullopt;
  for (const char* debug_only : profilers::system::kPythonDebugBuildSymbols) {
    if (exported(debug_only) != nullptr) return std::nullopt;
  }
  std::string problem;
  auto offsets = profilers::system::python_layout(
      minor_version(), {runtime, profilers::system::kPython313DebugOffsetsBytes}, problem);
  if (!offsets) return std::nullopt;
  python.offsets = *offsets;
  return python;
}

uint64_t word_at(uint64_t address) {
  uint64_t word;
  std::memcpy(&word, reinterpret_cast<const void*>(address), sizeof(word));
  return word;
}

uint8_t byte_at(uint64_t address) { return *reinterpret_cast<const uint8_t*>(address); }

}  // namespace

void find_python() {
  std::call_once(g_find_once, [] { g_python = find_interpreter(); });
}

int capture_python_stack(__u64* codes, int capacity) {
  if (!g_python) return 0;
  const PythonOffsets& layout = g_python->offsets;
  auto thread = reinterpret_cast<uint64_t>(g_python->this_thread_state());
  if (thread == 0) return 0;  // a thread Python never ran on
  uint64_t frame = word_at(thread + layout.thread_frame);
  if (frame != 0 && layout.cframe_current_frame >= 0) {
    frame = word_at(frame + layout.cframe_current_frame);
  }
  int depth = 0;
  // A frame chain is acyclic and no deeper than the interpreter's recursion limit; the bound
  // is the walk's all the same.
  for (int step = 0; frame != 0 && step < DORMANT_CUPTI_MAX_PYTHON_FRAMES + 8; ++step) {
    uint64_t previous = word_at(frame + layout.frame_previous);
    if (layout.frame_owner >= 0 && byte_at(frame + layout.frame_owner) == layout.owned_by_c_stack) {
      // An evaluation loop's entry: the frame recorded last was the first it ran.
      if (depth > 0) codes[depth - 1] |= DORMANT_CUPTI_PYTHON_ENTRY;
    } else {
      if (depth == capacity) break;
      uint64_t code = word_at(frame + layout.frame_code);
      if (layout.every_frame_is_entry ||
          (layout.frame_is_entry >= 0 && byte_at(frame + layout.frame_is_entry) != 0)) {
        code |= DORMANT_CUPTI_PYTHON_ENTRY;
      }
      codes[depth++] = code;
    }
    frame = previous;
  }
  return depth;
}

}  // namespace dormant::cupti
