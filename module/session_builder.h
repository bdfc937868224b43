// Builds the profilers a session's settings ask for. Building touches nothing on the host; the
// profilers probe and spawn in their start().
#pragma once

#include <memory>
#include <vector>

#include "module/api/profiler_module.h"
#include "profilers/profiler.h"

namespace dormant::module {

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(
    const ProfilingSettings& settings);

}  // namespace dormant::module
