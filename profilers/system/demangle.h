// C++ names as people read them: "_Z11alphaKernelPf" → "alphaKernel(float*)". A name that is not
// a mangled C++ name (or that the demangler refuses) comes back as it was.
#pragma once

#include <string>

namespace dormant::profilers::system {

std::string demangle(const std::string& name);

}  // namespace dormant::profilers::system
