#include "cupti_lib/src/cupti_api.h"

#include <cstdio>

#include <dlfcn.h>

namespace dormant::cupti {
namespace {

CuptiApi g_api;

struct Candidate {
  const char* cupti;
  const char* runtime;  // the CUDA runtime it goes with
};
constexpr Candidate kCandidates[] = {{"libcupti.so.13", "libcudart.so.13"},
                                     {"libcupti.so.12", "libcudart.so.12"}};

void* open_loaded(const char* name) { return dlopen(name, RTLD_NOW | RTLD_NOLOAD); }

// The program's libcupti, as a handle.
void* open_programs_cupti() {
  for (const Candidate& candidate : kCandidates) {  // loaded already: the program's own
    if (void* handle = open_loaded(candidate.cupti)) return handle;
  }
  for (const Candidate& candidate : kCandidates) {  // the one of its runtime
    void* runtime = open_loaded(candidate.runtime);
    if (runtime == nullptr) continue;
    dlclose(runtime);
    if (void* handle = dlopen(candidate.cupti, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  for (const Candidate& candidate : kCandidates) {  // a static runtime: the newest there is
    if (void* handle = dlopen(candidate.cupti, RTLD_NOW | RTLD_LOCAL)) return handle;
  }
  return nullptr;
}

template <typename Function>
bool find(void* handle, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(handle, name));
  if (function == nullptr) {
    std::fprintf(stderr, "dormant_cupti: this libcupti has no %s; GPU profiling is off\n", name);
  }
  return function != nullptr;
}

bool load() {
  void* handle = open_programs_cupti();
  if (handle == nullptr) {
    std::fprintf(stderr,
                 "dormant_cupti: found neither libcupti.so.13 nor libcupti.so.12 (%s); GPU "
                 "profiling is off\n",
                 dlerror());
    return false;
  }
  CuptiApi api;
  bool found =
      find(handle, "cuptiSubscribe", api.subscribe) &&
      find(handle, "cuptiUnsubscribe", api.unsubscribe) &&
      find(handle, "cuptiEnableCallback", api.enable_callback) &&
      find(handle, "cuptiActivityEnable", api.activity_enable) &&
      find(handle, "cuptiActivityDisable", api.activity_disable) &&
      find(handle, "cuptiActivityFlushAll", api.activity_flush_all) &&
      find(handle, "cuptiActivityRegisterCallbacks", api.activity_register_callbacks) &&
      find(handle, "cuptiActivityGetNextRecord", api.activity_get_next_record) &&
      find(handle, "cuptiActivityGetNumDroppedRecords", api.activity_get_num_dropped_records) &&
      find(handle, "cuptiGetResultString", api.get_result_string);
  if (!found) return false;  // the handle stays open: the program may use that CUPTI itself
  api.subscribe_v2 =
      reinterpret_cast<decltype(api.subscribe_v2)>(dlsym(handle, "cuptiSubscribe_v2"));
  g_api = api;
  return true;
}

}  // namespace

bool load_cupti() {
  static const bool loaded = load();
  return loaded;
}

const CuptiApi& cupti() { return g_api; }

}  // namespace dormant::cupti
