// Must not compile: the interface between the agent and its module sees nothing of the module.
#include "module/profiler_set.h"
