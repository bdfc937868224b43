#include "profilers/system/docker_cgroups.h"

#include <algorithm>

namespace dormant::profilers::system {
namespace {

bool is_container_id(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::optional<std::string> docker_container_id(std::string_view cgroup_name) {
  size_t slash = cgroup_name.rfind('/');
  std::string_view leaf =
      slash == std::string_view::npos ? cgroup_name : cgroup_name.substr(slash + 1);
  constexpr std::string_view kPrefix = "docker-";
  constexpr std::string_view kSuffix = ".scope";
  if (leaf.starts_with(kPrefix) && leaf.ends_with(kSuffix)) {
    std::string_view id =
        leaf.substr(kPrefix.size(), leaf.size() - kPrefix.size() - kSuffix.size());
    if (is_container_id(id)) return std::string(id);
  }
  if (slash == std::string_view::npos || !is_container_id(leaf)) return std::nullopt;
  std::string_view parent = cgroup_name.substr(0, slash);
  size_t parent_slash = parent.rfind('/');
  std::string_view parent_leaf =
      parent_slash == std::string_view::npos ? parent : parent.substr(parent_slash + 1);
  if (parent_leaf == "docker") return std::string(leaf);
  return std::nullopt;
}

}  // namespace dormant::profilers::system
