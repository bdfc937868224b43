// A profiler module from another build: its entry point answers with a build id no agent has.
#include "module/api/profiler_module.h"

extern "C" __attribute__((visibility("default"))) const dormant::module::ModuleEntry*
dormant_profiler_module_v1() {
  static const dormant::module::ModuleEntry entry{"another-build-of-dormant", nullptr};
  return &entry;
}
