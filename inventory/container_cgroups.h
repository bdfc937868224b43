// Which cgroups are containers' own, by the names that container runtimes and their cgroup
// drivers (systemd or cgroupfs) give them: docker, containerd (Kubernetes CRI and nerdctl),
// CRI-O and podman.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dormant::inventory {

// The runtime a container's cgroup name tells, where it tells one.
enum class ContainerRuntime {
  kUnknown,  // a bare id: docker or containerd below kubepods, containerd's /<namespace>/<id>…
  kDocker,
  kContainerd,
  kCrio,
  kPodman,
};

// "docker", "containerd", "cri-o", "podman"; "" for kUnknown.
std::string_view to_string(ContainerRuntime runtime);

struct ContainerCgroup {
  std::string id;  // 64 lowercase hex digits, safe to put in a path
  ContainerRuntime runtime = ContainerRuntime::kUnknown;

  auto operator<=>(const ContainerCgroup&) const = default;
};

// 64 lowercase hex digits, the form of every runtime's container ids: no '/', no "..".
bool is_container_id(std::string_view text);

// The container whose own cgroup `cgroup_name` is (with or without its leading '/'), by the last
// component of the name:
//   systemd driver:  "…/docker-<id>.scope", "…/cri-containerd-<id>.scope", "…/crio-<id>.scope",
//                    "…/libpod-<id>.scope", "…/nerdctl-<id>.scope" (the kubepods…slice trees
//                    of Kubernetes, system.slice, machine.slice, user slices);
//   cgroupfs driver: "…/crio-<id>", "…/libpod-<id>" (as in "/libpod_parent/libpod-<id>"), and a
//                    bare "…/<id>": "docker/<id>" for docker, "kubepods/burstable/pod<uid>/<id>"
//                    or "kubepods/pod<uid>/<id>" for Kubernetes over docker or containerd, and
//                    containerd's "/<namespace>/<id>" outside Kubernetes.
// The monitors beside containers ("crio-conmon-<id>.scope", "libpod-conmon-<id>.scope") are not
// containers. Cgroups below a container's own ("…/docker-<id>.scope/init") are not either: see
// container_of() in containers.h for the walk up.
std::optional<ContainerCgroup> container_cgroup(std::string_view cgroup_name);

// The 64-hex docker container id when `cgroup_name` is a docker container's own cgroup:
// "docker/<id>" (cgroupfs driver) or "…/docker-<id>.scope" (systemd driver). Docker only: this
// is what --perf-max-docker-containers picks among.
std::optional<std::string> docker_container_id(std::string_view cgroup_name);

}  // namespace dormant::inventory
