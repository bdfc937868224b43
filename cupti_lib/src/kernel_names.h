// Kernel names as the activity probe passes them on: whole up to DORMANT_CUPTI_MAX_NAME_BYTES; a
// longer one (CUTLASS's and cuBLASLt's template instances run to kilobytes) cut, ending in '#' and
// a 64-bit hash of the whole name, so that names that differ only past the cut never merge.
#pragma once

#include <cstddef>

namespace dormant::cupti {

// At most this many long names are kept cut; past it (or without memory) they read kNotKept.
inline constexpr size_t kMaxLongNames = 1024;
inline constexpr const char* kNotKept = "[a long kernel name the library could not keep]";

// `name` itself, or its cut form, kept for the library's life (CUPTI's name of a kernel stays
// put for the program's life, and so does its cut form); null stays null.
const char* wire_kernel_name(const char* name);

}  // namespace dormant::cupti
