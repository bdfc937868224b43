#include "profilers/system/containers.h"

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "profilers/system/docker_cgroups.h"

namespace dormant::profilers::system {
namespace {

constexpr size_t kShortIdLength = 12;  // as `docker ps` shows ids
constexpr size_t kMaxNameLength = 256;

// The container of one cgroup path: the path itself or the nearest ancestor that is a
// container's own cgroup ("/system.slice/docker-<id>.scope/init" → <id>).
std::optional<std::string> container_in_path(std::string_view path) {
  for (size_t end = path.size(); end != 0 && end != std::string_view::npos;
       end = path.rfind('/', end - 1)) {
    if (auto id = docker_container_id(path.substr(0, end))) return id;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> docker_container_of(const ProcessCgroups& cgroups) {
  if (cgroups.unified) {
    if (auto id = container_in_path(*cgroups.unified)) return id;
  }
  for (const auto& [controller, path] : cgroups.v1) {
    if (auto id = container_in_path(path)) return id;
  }
  return std::nullopt;
}

std::optional<std::string> docker_container_name(std::string_view config_json) {
  auto config = nlohmann::json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return std::nullopt;
  auto name = config.find("Name");
  if (name == config.end() || !name->is_string()) return std::nullopt;
  std::string text = name->get<std::string>();
  if (text.starts_with('/')) text.erase(0, 1);
  // The name becomes a frame of every stack: no separator, no line break, no giant.
  if (text.empty() || text.size() > kMaxNameLength ||
      text.find_first_of(";\n\r") != std::string::npos) {
    return std::nullopt;
  }
  return text;
}

std::string ContainerNames::of_pid(pid_t pid) {
  // perf's idle samples are pid 0 (swapper), which read_process_cgroups takes for "this process".
  if (pid <= 0) return "";
  auto cgroups = read_process_cgroups(pid);
  if (!cgroups) return "";
  auto id = docker_container_of(*cgroups);
  return id ? name_of(*id) : "";
}

std::string ContainerNames::name_of(const std::string& id) {
  if (auto known = names_.find(id); known != names_.end()) return known->second;
  auto config = read_file(docker_root_ / "containers" / id / "config.v2.json");
  std::optional<std::string> name;
  if (config) name = docker_container_name(*config);
  // Only names are kept: a container still starting may have no state file yet.
  if (!name) return id.substr(0, kShortIdLength);
  return names_.emplace(id, std::move(*name)).first->second;
}

}  // namespace dormant::profilers::system
