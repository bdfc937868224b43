// The cgroups picked for perf, as perf record's command line names them (-e … -G …).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profilers/system/cgroup_selection.h"

namespace dormant::profilers::system {

std::vector<std::string> perf_cgroup_names(const std::vector<CgroupPick>& picks);

// perf pairs the k-th -G name with the k-th event and rejects more names than events, so watching
// N cgroups takes the event N times: {"-e", event, …, "-e", event, "-G", "a,b,…"}. Empty for no
// names. perf accepts -G only together with -a (per-CPU mode).
std::vector<std::string> perf_cgroup_arguments(std::string_view event,
                                               const std::vector<std::string>& names);

}  // namespace dormant::profilers::system
