// The container a process runs in, named as gProfiler names it in a profile's container frame:
// the docker container's name, or its short id when the name cannot be read; "" outside containers.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "profilers/system/process_cgroups.h"

namespace dormant::profilers::system {

// The 64-hex id of the docker container holding a process with these cgroups: the container's
// own cgroup or any cgroup below it, in the v2 hierarchy or any v1 one.
std::optional<std::string> docker_container_of(const ProcessCgroups& cgroups);

// The "Name" of a docker config.v2.json without its leading '/'; nullopt when the text is not
// such a file or the name is empty.
std::optional<std::string> docker_container_name(std::string_view config_json);

class ContainerNames {
 public:
  // `docker_root` is the docker daemon's data root: names come from its state files, so they
  // are known without a running daemon or its socket.
  explicit ContainerNames(std::filesystem::path docker_root = "/var/lib/docker")
      : docker_root_(std::move(docker_root)) {}

  // "" for a process outside containers or one that has exited.
  std::string of_pid(pid_t pid);
  // The name of the container with this id: from docker's state, else the short id.
  std::string name_of(const std::string& id);

 private:
  std::filesystem::path docker_root_;
  // id → name, read once. Bounded by the containers that ran while the profiler did.
  std::map<std::string, std::string, std::less<>> names_;
};

}  // namespace dormant::profilers::system
