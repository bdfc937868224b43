// Which cgroups are docker containers' own, by the names docker's cgroup drivers give them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dormant::profilers::system {

// The 64-hex docker container id when `cgroup_name` is a container's own cgroup:
// "docker/<id>" (cgroupfs driver) or "…/docker-<id>.scope" (systemd driver).
std::optional<std::string> docker_container_id(std::string_view cgroup_name);

}  // namespace dormant::profilers::system
