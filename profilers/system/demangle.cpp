#include "profilers/system/demangle.h"

#include <cstdlib>

#include <cxxabi.h>

namespace dormant::profilers::system {

std::string demangle(const std::string& name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string text = status == 0 && readable != nullptr ? readable : name;
  std::free(readable);
  return text;
}

}  // namespace dormant::profilers::system
