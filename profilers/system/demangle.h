// C++ names as people read them: "_Z11alphaKernelPf" → "alphaKernel(float*)". A name that is not
// a mangled C++ name (or that the demangler refuses) comes back as it was.
//
// Names come from other users' files and programs: a mangled name of a few hundred bytes whose
// back-references nest can demangle to gigabytes, so what comes out is cut at kMaxDemangledName
// bytes, and the demangler is stopped there rather than left to finish.
#pragma once

#include <cstddef>
#include <string>

namespace dormant::profilers::system {

inline constexpr size_t kMaxDemangledName = 4096;

std::string demangle(const std::string& name);

}  // namespace dormant::profilers::system
