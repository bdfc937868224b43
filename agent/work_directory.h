// The profilers' work files (perf.data and the like) live in <state dir>/work, private to the
// agent's user like the state directory itself, and not in a /tmp every user shares. Each agent
// process names its entries there NAME-PID-…; at start, those of agents no longer running (one
// killed with SIGKILL, say) are removed.
#pragma once

#include <filesystem>

#include "common/result.h"

namespace dormant::agent {

std::filesystem::path work_directory_of(const std::filesystem::path& state_dir);

// Makes the state directory and its work directory private (make_private_directory) and sweeps
// the work directory; the number of leftovers removed.
Result<size_t> prepare_work_directory(const std::filesystem::path& state_dir);

}  // namespace dormant::agent
