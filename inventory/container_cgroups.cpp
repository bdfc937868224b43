#include "inventory/container_cgroups.h"

#include <algorithm>
#include <array>
#include <utility>

namespace dormant::inventory {

std::string_view to_string(ContainerRuntime runtime) {
  switch (runtime) {
    case ContainerRuntime::kDocker:
      return "docker";
    case ContainerRuntime::kContainerd:
      return "containerd";
    case ContainerRuntime::kCrio:
      return "cri-o";
    case ContainerRuntime::kPodman:
      return "podman";
    case ContainerRuntime::kUnknown:
      break;
  }
  return "";
}
namespace {

// The systemd driver's scope prefixes, "<prefix><id>.scope".
constexpr std::array<std::pair<std::string_view, ContainerRuntime>, 5> kScopePrefixes = {{
    {"docker-", ContainerRuntime::kDocker},
    {"cri-containerd-", ContainerRuntime::kContainerd},
    {"crio-", ContainerRuntime::kCrio},
    {"libpod-", ContainerRuntime::kPodman},
    {"nerdctl-", ContainerRuntime::kContainerd},
}};

// The cgroupfs driver's prefixes, "<prefix><id>" (docker and containerd use the bare id).
constexpr std::array<std::pair<std::string_view, ContainerRuntime>, 2> kCgroupfsPrefixes = {{
    {"crio-", ContainerRuntime::kCrio},
    {"libpod-", ContainerRuntime::kPodman},
}};

std::string_view last_component(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool is_container_id(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::optional<ContainerCgroup> container_cgroup(std::string_view cgroup_name) {
  while (cgroup_name.ends_with('/')) cgroup_name.remove_suffix(1);
  std::string_view leaf = last_component(cgroup_name);
  // A monitor's scope ("crio-conmon-<id>.scope") fails these: "conmon-<id>" is not an id.
  constexpr std::string_view kScope = ".scope";
  if (leaf.ends_with(kScope)) {
    std::string_view unit = leaf.substr(0, leaf.size() - kScope.size());
    for (const auto& [prefix, runtime] : kScopePrefixes) {
      if (unit.starts_with(prefix) && is_container_id(unit.substr(prefix.size()))) {
        return ContainerCgroup{std::string(unit.substr(prefix.size())), runtime};
      }
    }
    return std::nullopt;
  }
  for (const auto& [prefix, runtime] : kCgroupfsPrefixes) {
    if (leaf.starts_with(prefix) && is_container_id(leaf.substr(prefix.size()))) {
      return ContainerCgroup{std::string(leaf.substr(prefix.size())), runtime};
    }
  }
  if (!is_container_id(leaf)) return std::nullopt;
  // A bare id needs a parent: one at the top is no runtime's.
  if (leaf.size() == cgroup_name.size() || (leaf.size() + 1 == cgroup_name.size())) {
    return std::nullopt;
  }
  std::string_view parent = cgroup_name.substr(0, cgroup_name.size() - leaf.size() - 1);
  ContainerRuntime runtime =
      last_component(parent) == "docker" ? ContainerRuntime::kDocker : ContainerRuntime::kUnknown;
  return ContainerCgroup{std::string(leaf), runtime};
}

std::optional<std::string> docker_container_id(std::string_view cgroup_name) {
  auto container = container_cgroup(cgroup_name);
  if (!container || container->runtime != ContainerRuntime::kDocker) return std::nullopt;
  return std::move(container->id);
}

}  // namespace dormant::inventory
