// A profiler module that needs a library the loader cannot find.
int dormant_unreachable_dependency(void);
int dormant_profiler_module_v1(void) { return dormant_unreachable_dependency(); }
