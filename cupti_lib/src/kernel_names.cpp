#include "cupti_lib/src/kernel_names.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "dormant_cupti/probes.h"

namespace dormant::cupti {
namespace {

constexpr size_t kHashText = 1 + 16;  // '#' and the hash in hex

uint64_t fnv1a(const char* text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (; *text != 0; ++text) {
    hash ^= static_cast<unsigned char>(*text);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

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
    std::string cut(name, DORMANT_CUPTI_MAX_NAME_BYTES - kHashText);
    char hash[kHashText + 1];
    std::snprintf(hash, sizeof(hash), "#%016" PRIx64, fnv1a(name));
    cut += hash;
    return g_cut->emplace(name, std::move(cut)).first->second.c_str();
  } catch (...) {
    return kNotKept;
  }
}

}  // namespace dormant::cupti
