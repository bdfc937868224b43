#include "cupti_lib/src/kernel_names.h"

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "dormant_cupti/name_hash.h"
#include "dormant_cupti/probes.h"

namespace dormant::cupti {
namespace {

std::mutex g_mutex;
// By CUPTI's pointer: a kernel's records all point at one name.
std::unordered_map<const char*, std::string>* g_cut = nullptr;  // never freed: used until exit

}  // namespace

const char* wire_kernel_name(const char* name) {
  if (name == nullptr ||
      ::strnlen(name, DORMANT_CUPTI_MAX_NAME_BYTES + 1) <= DORMANT_CUPTI_MAX_NAME_BYTES) {
    return name;
  }
  try {  // under CUPTI's frames: nothing may unwind through them
    std::lock_guard lock(g_mutex);
    if (g_cut == nullptr) g_cut = new std::unordered_map<const char*, std::string>();
    auto found = g_cut->find(name);
    if (found != g_cut->end()) return found->second.c_str();
    if (g_cut->size() >= kMaxLongNames) return kNotKept;
    return g_cut->emplace(name, cut_name(name, name, DORMANT_CUPTI_MAX_NAME_BYTES))
        .first->second.c_str();
  } catch (...) {
    return kNotKept;
  }
}

}  // namespace dormant::cupti
