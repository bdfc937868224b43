#include "profilers/system/perf_cgroups.h"

namespace dormant::profilers::system {

std::vector<std::string> perf_cgroup_names(const std::vector<CgroupPick>& picks) {
  std::vector<std::string> names;
  names.reserve(picks.size());
  for (const CgroupPick& pick : picks) names.push_back(pick.name);
  return names;
}

std::vector<std::string> perf_cgroup_arguments(std::string_view event,
                                               const std::vector<std::string>& names) {
  if (names.empty()) return {};
  std::vector<std::string> args;
  std::string joined;
  for (const std::string& name : names) {
    args.insert(args.end(), {"-e", std::string(event)});
    joined += (joined.empty() ? "" : ",") + name;
  }
  args.insert(args.end(), {"-G", joined});
  return args;
}

}  // namespace dormant::profilers::system
