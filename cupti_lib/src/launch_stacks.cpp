#include "cupti_lib/src/launch_stacks.h"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <mutex>

#include <link.h>
#include <unwind.h>

#include "cupti_lib/src/frame_unwinder.h"
#include "cupti_lib/src/python_stacks.h"

namespace dormant::cupti {
namespace {

struct CodeRange {
  uintptr_t begin;
  uintptr_t end;
};

constexpr int kMaxRanges = 32;
CodeRange g_ranges[kMaxRanges];
int g_range_count = 0;  // written once, under g_find_once, before any capture reads it
std::once_flag g_find_once;

bool is_cuda_library(const char* path) {
  const char* name = std::strrchr(path, '/');
  name = name ? name + 1 : path;
  for (const char* prefix :
       {"libcupti.so", "libcuda.so", "libcudart.so", DORMANT_CUPTI_LIBRARY_NAME}) {
    if (std::strncmp(name, prefix, std::strlen(prefix)) == 0) return true;
  }
  return false;
}

int add_ranges(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr || !is_cuda_library(info->dlpi_name)) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_range_count < kMaxRanges; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) continue;
    uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    g_ranges[g_range_count++] = {begin, begin + header.p_memsz};
  }
  return 0;
}

bool in_cuda_library(uintptr_t address) {
  for (int i = 0; i < g_range_count; ++i) {
    if (address >= g_ranges[i].begin && address < g_ranges[i].end) return true;
  }
  return false;
}

// libgcc's unwinder, for stacks the fast one leaves to it: the same frames, into the same array.
struct Unwinding {
  uint64_t* frames;
  int capacity;
  int depth;
};

_Unwind_Reason_Code add_frame(_Unwind_Context* context, void* argument) {
  auto& unwinding = *static_cast<Unwinding*>(argument);
  int before_instruction = 0;
  uintptr_t address = _Unwind_GetIPInfo(context, &before_instruction);
  if (address == 0) return _URC_END_OF_STACK;
  if (!before_instruction) --address;  // a return address: the call is the byte before
  unwinding.frames[unwinding.depth++] = address;
  return unwinding.depth < unwinding.capacity ? _URC_NO_REASON : _URC_END_OF_STACK;
}

}  // namespace

void find_cuda_library_code() {
  std::call_once(g_find_once, [] { dl_iterate_phdr(add_ranges, nullptr); });
  find_python();
}

void capture_launch_stack(dormant_cupti_launch& launch) {
  launch.depth = 0;
  // The stack as far as the program's frames go: the frames of the CUDA libraries and of this
  // one come first, and a stack deeper than the probe takes loses its outermost frames.
  uint64_t frames[DORMANT_CUPTI_MAX_FRAMES + 32];
  int depth = unwind_caller_stack(frames, static_cast<int>(std::size(frames)));
  if (depth < 0) {  // a frame the fast unwinder leaves to libgcc's
    Unwinding unwinding{frames, static_cast<int>(std::size(frames)), 0};
    _Unwind_Backtrace(add_frame, &unwinding);
    depth = unwinding.depth;
  }
  int first = 0;
  while (first < depth && in_cuda_library(frames[first])) ++first;
  for (int i = first; i < depth && launch.depth < DORMANT_CUPTI_MAX_FRAMES; ++i) {
    launch.frames[launch.depth++] = frames[i];
  }
  launch.python_depth =
      static_cast<uint32_t>(capture_python_stack(launch.python, DORMANT_CUPTI_MAX_PYTHON_FRAMES));
}

}  // namespace dormant::cupti
