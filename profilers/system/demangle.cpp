#include "profilers/system/demangle.h"

#include <csetjmp>

#include <libiberty/demangle.h>

namespace dormant::profilers::system {
namespace {

struct Output {
  char text[kMaxDemangledName];
  size_t size = 0;
  std::jmp_buf full;
};

// libiberty's printer calls this with each piece; once the name is full it is left by longjmp.
// That is safe here: the callback interface keeps all its state on the stack (it is meant to run
// even in signal handlers), and no frame in between has anything to destroy.
extern "C" void append_piece(const char* piece, size_t size, void* opaque) {
  Output* output = static_cast<Output*>(opaque);
  size_t room = sizeof(output->text) - output->size;
  size_t taken = size < room ? size : room;
  for (size_t i = 0; i < taken; ++i) output->text[output->size + i] = piece[i];
  output->size += taken;
  if (taken < size || output->size == sizeof(output->text)) std::longjmp(output->full, 1);
}

// False where `name` is no mangled name libiberty reads. `output` is the caller's: no object of
// this frame changes between setjmp and longjmp.
bool demangle_into(const char* name, Output& output) {
  if (setjmp(output.full) != 0) return true;  // full
  return cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_ANSI, append_piece, &output) != 0;
}

}  // namespace

std::string demangle(const std::string& name) {
  if (!name.starts_with("_Z")) return name;
  Output output;
  if (!demangle_into(name.c_str(), output)) return name;
  return std::string(output.text, output.size);
}

}  // namespace dormant::profilers::system
