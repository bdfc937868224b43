#include "inventory/container_metadata.h"

#include <exception>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/unique_fd.h"

namespace dormant::inventory {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kShortIdLength = 12;  // as `docker ps` shows ids
constexpr size_t kMaxNameLength = 256;
constexpr size_t kMaxKubernetesPartLength = 253;  // a DNS subdomain, the longest object name
// The runtimes' files are outside input: read no more than this of one.
constexpr off_t kMaxConfigBytes = off_t{1} << 20;          // config.v2.json, OCI config.json
constexpr off_t kMaxContainersJsonBytes = off_t{8} << 20;  // one entry per container on the host
constexpr size_t kMaxStorageEntries = 16384;
constexpr size_t kMaxContainerdNamespaces = 64;
constexpr size_t kMaxCachedNames = 4096;
constexpr std::string_view kStorageContainers = "overlay-containers";

// A name becomes a frame of every stack: no separator, no line break or other control
// character, no giant.
bool usable(std::string_view name, size_t max_length) {
  if (name.empty() || name.size() > max_length) return false;
  for (char c : name) {
    if (c == ';' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  }
  return true;
}

std::optional<std::string> usable_name(std::string name) {
  if (!usable(name, kMaxNameLength)) return std::nullopt;
  return name;
}

// `object[key]` when it is a string.
std::optional<std::string_view> string_at(const json& object, std::string_view key) {
  if (!object.is_object()) return std::nullopt;
  auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return std::nullopt;
  return std::string_view(found->get_ref<const json::string_t&>());
}

// One part of a Kubernetes name: a DNS subdomain or label, nothing that breaks a path-like name.
std::optional<std::string> kubernetes_part(std::optional<std::string_view> part) {
  if (!part || !usable(*part, kMaxKubernetesPartLength) ||
      part->find('/') != std::string_view::npos) {
    return std::nullopt;
  }
  return std::string(*part);
}

// "<namespace>/<pod>/<container>", when all three are there and fit in a path-like name.
std::optional<std::string> kubernetes_name(const std::optional<std::string>& pod_namespace,
                                           const std::optional<std::string>& pod,
                                           const std::string& container) {
  if (!pod_namespace || !pod || !kubernetes_part(container)) return std::nullopt;
  return *pod_namespace + "/" + *pod + "/" + container;
}

json parse_object(std::string_view text) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? std::move(parsed) : json();
}

// The string members of a JSON object whose keys and values can be names, up to kMaxLabels.
Labels labels_in(const json& object) {
  Labels labels;
  if (!object.is_object()) return labels;
  for (const auto& [key, value] : object.items()) {
    if (labels.size() == kMaxLabels) break;
    if (!value.is_string() || !usable(key, kMaxNameLength)) continue;
    const std::string& text = value.get_ref<const json::string_t&>();
    if (text.empty() || usable(text, kMaxNameLength)) labels.emplace(key, text);
  }
  return labels;
}

// CRI-O keeps a container's labels as one annotation holding a JSON object.
Labels labels_in_text(std::optional<std::string_view> text) {
  if (!text || text->size() > static_cast<size_t>(kMaxConfigBytes)) return {};
  return labels_in(parse_object(*text));
}

// Sets the pod and container name from the kubelet's labels (docker's Config.Labels, CRI-O's
// annotations) when they are all there: true when they were.
bool take_kubelet_labels(const json& labels, ContainerMetadata& metadata) {
  auto pod_namespace = kubernetes_part(string_at(labels, "io.kubernetes.pod.namespace"));
  auto pod = kubernetes_part(string_at(labels, "io.kubernetes.pod.name"));
  auto container = kubernetes_part(string_at(labels, "io.kubernetes.container.name"));
  if (!pod_namespace || !pod || !container) return false;
  metadata.pod_namespace = std::move(pod_namespace);
  metadata.pod_name = std::move(pod);
  metadata.name = std::move(*container);
  return true;
}

using Found = ContainerNames::Found;

const json* docker_labels(const json& config) {
  auto section = config.find("Config");
  if (section == config.end() || !section->is_object()) return nullptr;
  auto labels = section->find("Labels");
  return labels != section->end() && labels->is_object() ? &*labels : nullptr;
}

Found docker_found(std::string_view config_json) {
  json config = parse_object(config_json);
  if (config.is_null()) return {};
  ContainerMetadata metadata;
  metadata.runtime = "docker";
  const json* labels = docker_labels(config);
  if (labels) metadata.container_labels = labels_in(*labels);
  // dockershim's pod sandbox (the pause container) carries the pod's labels and no container
  // name: "POD", as the kubelet calls it.
  if (labels && string_at(*labels, "io.kubernetes.docker.type") == "podsandbox") {
    metadata.pod_labels = metadata.container_labels;
    json named = *labels;
    named["io.kubernetes.container.name"] = "POD";
    if (take_kubelet_labels(named, metadata)) return {std::move(metadata), true};
  }
  if (labels && take_kubelet_labels(*labels, metadata)) return {std::move(metadata), true};
  if (std::optional<std::string_view> name = string_at(config, "Name")) {
    if (name->starts_with('/')) name->remove_prefix(1);
    metadata.name = usable_name(std::string(*name)).value_or("");
  }
  return {std::move(metadata), true};
}

Found oci_bundle_found(std::string_view config_json) {
  json config = parse_object(config_json);
  if (config.is_null()) return {};
  ContainerMetadata metadata;
  auto annotations = config.find("annotations");
  if (annotations == config.end() || !annotations->is_object()) return {std::move(metadata), true};
  // containerd's CRI plugin. A pod's sandbox (its pause process) has no container name: "POD".
  std::optional<std::string_view> container =
      string_at(*annotations, "io.kubernetes.cri.container-type") == "sandbox"
          ? std::optional<std::string_view>("POD")
          : string_at(*annotations, "io.kubernetes.cri.container-name");
  auto pod_namespace =
      kubernetes_part(string_at(*annotations, "io.kubernetes.cri.sandbox-namespace"));
  auto pod = kubernetes_part(string_at(*annotations, "io.kubernetes.cri.sandbox-name"));
  if (auto name = kubernetes_part(container); name && pod_namespace && pod) {
    metadata.runtime = "containerd";
    metadata.pod_namespace = std::move(pod_namespace);
    metadata.pod_name = std::move(pod);
    metadata.name = std::move(*name);
    return {std::move(metadata), true};
  }
  // CRI-O: the kubelet's labels, copied into the annotations.
  if (take_kubelet_labels(*annotations, metadata)) {
    metadata.runtime = "cri-o";
    metadata.container_labels =
        labels_in_text(string_at(*annotations, "io.kubernetes.cri-o.Labels"));
    return {std::move(metadata), true};
  }
  if (auto name = string_at(*annotations, "nerdctl/name")) {
    metadata.runtime = "containerd";
    metadata.name = usable_name(std::string(*name)).value_or("");
  }
  return {std::move(metadata), true};
}

// An open file that is a regular one of at most `max_bytes`: not a link (the last component),
// not a FIFO that would block, not a giant.
struct OpenedFile {
  UniqueFd fd;
  struct stat info {};
};

std::optional<OpenedFile> open_bounded(const fs::path& path, off_t max_bytes) {
  OpenedFile file{UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK))};
  if (!file.fd || ::fstat(file.fd.get(), &file.info) != 0 || !S_ISREG(file.info.st_mode) ||
      file.info.st_size > max_bytes) {
    return std::nullopt;
  }
  return file;
}

// Its content, or nullopt when it grows past `max_bytes` while read or a read fails.
std::optional<std::string> read_bounded(const OpenedFile& file, off_t max_bytes) {
  auto content = read_rest(file.fd.get(), "", static_cast<size_t>(max_bytes));
  return content ? std::optional(std::move(*content)) : std::nullopt;
}

std::optional<std::string> read_bounded(const fs::path& path, off_t max_bytes) {
  auto file = open_bounded(path, max_bytes);
  if (!file) return std::nullopt;
  return read_bounded(*file, max_bytes);
}

Found from_docker(const fs::path& root, const std::string& id) {
  auto config = read_bounded(root / "containers" / id / "config.v2.json", kMaxConfigBytes);
  if (!config) return {};
  Found found = docker_found(*config);
  // A Kubernetes container's pod labels are its sandbox's (dockershim).
  if (!found.metadata) return found;
  auto sandbox = found.metadata->container_labels.find("io.kubernetes.sandbox.id");
  if (sandbox == found.metadata->container_labels.end() || !is_container_id(sandbox->second) ||
      sandbox->second == id) {
    return found;
  }
  auto sandbox_config =
      read_bounded(root / "containers" / sandbox->second / "config.v2.json", kMaxConfigBytes);
  if (!sandbox_config) return found;
  json sandbox_json = parse_object(*sandbox_config);
  if (const json* labels = docker_labels(sandbox_json)) {
    found.metadata->pod_labels = labels_in(*labels);
  }
  return found;
}

Found from_containerd(const std::vector<fs::path>& roots, const std::string& id) {
  for (const fs::path& tasks : roots) {
    std::error_code error;
    fs::directory_iterator namespaces(tasks, error);
    size_t seen = 0;
    for (; !error && namespaces != fs::directory_iterator() && seen < kMaxContainerdNamespaces;
         namespaces.increment(error), ++seen) {
      auto config = read_bounded(namespaces->path() / id / "config.json", kMaxConfigBytes);
      // Ids are unique across namespaces: this bundle is the container's, named or not.
      if (!config) continue;
      Found found = oci_bundle_found(*config);
      if (found.metadata) found.metadata->runtime = "containerd";
      return found;
    }
  }
  return {};
}

// One containers/storage bundle's config.json (CRI-O, podman).
std::optional<std::string> storage_bundle(const fs::path& root, std::string_view id) {
  return read_bounded(root / kStorageContainers / id / "userdata" / "config.json", kMaxConfigBytes);
}

// A CRI-O container's pod labels: its sandbox's io.kubernetes.cri-o.Labels.
Labels crio_pod_labels(const fs::path& root, std::string_view config_json) {
  json annotations = parse_object(config_json).value("annotations", json::object());
  std::optional<std::string_view> sandbox = string_at(annotations, "io.kubernetes.cri-o.SandboxID");
  if (!sandbox || !is_container_id(*sandbox)) return {};
  auto sandbox_config = storage_bundle(root, *sandbox);
  if (!sandbox_config) return {};
  json sandbox_annotations = parse_object(*sandbox_config).value("annotations", json::object());
  return labels_in_text(string_at(sandbox_annotations, "io.kubernetes.cri-o.Labels"));
}

Found from_storage_bundles(const std::vector<fs::path>& roots, const std::string& id) {
  Found found;
  for (const fs::path& root : roots) {
    auto config = storage_bundle(root, id);
    if (!config) continue;
    Found bundle = oci_bundle_found(*config);
    if (bundle.named()) {
      if (bundle.metadata->runtime == "cri-o") {
        bundle.metadata->pod_labels = crio_pod_labels(root, *config);
      } else {
        bundle.metadata->runtime = "podman";
      }
      return bundle;
    }
    found.settled = found.settled || bundle.settled;
  }
  return found;
}

// The container of one cgroup path: the path itself or the nearest ancestor that is a
// container's own cgroup ("/system.slice/docker-<id>.scope/init" → <id>).
std::optional<ContainerCgroup> container_in_path(std::string_view path) {
  for (size_t end = path.size(); end != 0 && end != std::string_view::npos;
       end = path.rfind('/', end - 1)) {
    if (auto container = container_cgroup(path.substr(0, end))) return container;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ContainerCgroup> container_of(const ProcessCgroups& cgroups) {
  if (cgroups.unified) {
    if (auto container = container_in_path(*cgroups.unified)) return container;
  }
  for (const auto& [controller, path] : cgroups.v1) {
    if (auto container = container_in_path(path)) return container;
  }
  return std::nullopt;
}

std::string ContainerMetadata::frame_name() const {
  return kubernetes_name(pod_namespace, pod_name, name).value_or(name);
}

std::optional<ContainerMetadata> docker_metadata(std::string_view config_json) {
  return docker_found(config_json).metadata;
}

std::optional<ContainerMetadata> oci_bundle_metadata(std::string_view config_json) {
  return oci_bundle_found(config_json).metadata;
}

namespace {
std::optional<std::string> frame_name_of(const Found& found) {
  if (!found.named()) return std::nullopt;
  return found.metadata->frame_name();
}
}  // namespace

std::optional<std::string> docker_container_name(std::string_view config_json) {
  return frame_name_of(docker_found(config_json));
}

std::optional<std::string> oci_bundle_name(std::string_view config_json) {
  return frame_name_of(oci_bundle_found(config_json));
}

std::map<std::string, std::string, std::less<>> storage_container_names(
    std::string_view containers_json) {
  // Only "id" and "names" of each entry are kept while parsing: the rest (layers, metadata,
  // big-data digests) is most of the file.
  auto keep = [](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 2) {
      return parsed == "id" || parsed == "names";
    }
    return true;
  };
  json entries = json::parse(containers_json, keep, /*allow_exceptions=*/false);
  std::map<std::string, std::string, std::less<>> names;
  if (!entries.is_array()) return names;
  for (const json& entry : entries) {
    if (names.size() == kMaxStorageEntries) break;
    std::optional<std::string_view> id = string_at(entry, "id");
    if (!id || !is_container_id(*id)) continue;
    auto entry_names = entry.find("names");
    if (entry_names == entry.end() || !entry_names->is_array() || entry_names->empty() ||
        !entry_names->front().is_string()) {
      continue;
    }
    if (auto name = usable_name(entry_names->front().get<std::string>())) {
      names.emplace(*id, std::move(*name));
    }
  }
  return names;
}

std::string ContainerNames::of_pid(pid_t pid) {
  // perf's idle samples are pid 0 (swapper), which read_process_cgroups takes for "this process".
  if (pid <= 0) return "";
  auto cgroups = read_process_cgroups(pid);
  if (!cgroups) return "";
  auto container = container_of(*cgroups);
  return container ? name_of(*container) : "";
}

std::string ContainerNames::name_of(const std::string& id) {
  return name_of(ContainerCgroup{id, ContainerRuntime::kUnknown});
}

std::string ContainerNames::name_of(const ContainerCgroup& container) {
  auto metadata = metadata_of(container);
  return metadata ? metadata->frame_name() : "";
}

std::optional<ContainerMetadata> ContainerNames::metadata_of(const ContainerCgroup& container) {
  // The id goes into paths below: nothing but hex digits.
  if (!is_container_id(container.id)) return std::nullopt;
  if (auto known = metadata_.find(container.id); known != metadata_.end()) return known->second;
  Found found;
  try {
    found = lookup(container);
  } catch (const std::exception&) {
    // A shape of file not foreseen: the short id, and another try next time.
    found = {};
  }
  bool settled = found.named() || found.settled;
  ContainerMetadata metadata = settle(container, std::move(found));
  // A container still starting may have no file yet: only what is settled is kept.
  if (!settled) return metadata;
  if (metadata_.size() >= kMaxCachedNames) metadata_.clear();
  return metadata_.emplace(container.id, std::move(metadata)).first->second;
}

ContainerMetadata ContainerNames::settle(const ContainerCgroup& container, Found found) {
  ContainerMetadata metadata = found.metadata ? std::move(*found.metadata) : ContainerMetadata{};
  metadata.id = container.id;
  if (metadata.name.empty()) metadata.name = container.id.substr(0, kShortIdLength);
  if (metadata.runtime.empty()) metadata.runtime = to_string(container.runtime);
  for (Labels* labels : {&metadata.pod_labels, &metadata.container_labels}) {
    std::erase_if(*labels, [&](const auto& label) { return !kept_labels_.contains(label.first); });
  }
  return metadata;
}

ContainerNames::Found ContainerNames::lookup(const ContainerCgroup& container) {
  const std::string& id = container.id;
  auto storage = [&]() -> Found {
    Found bundle = from_storage_bundles(roots_.storage, id);
    if (bundle.named()) return bundle;
    Found index = from_storage_index(id);
    if (index.named()) return index;
    return {std::nullopt, bundle.settled};
  };
  switch (container.runtime) {
    case ContainerRuntime::kDocker:
      return from_docker(roots_.docker, id);
    case ContainerRuntime::kContainerd:
      return from_containerd(roots_.containerd_tasks, id);
    case ContainerRuntime::kCrio:
    case ContainerRuntime::kPodman:
      return storage();
    case ContainerRuntime::kUnknown:
      break;
  }
  // Each in turn: one runtime's files are not read when another's had the name.
  Found docker = from_docker(roots_.docker, id);
  if (docker.named()) return docker;
  Found containerd = from_containerd(roots_.containerd_tasks, id);
  if (containerd.named()) return containerd;
  Found podman_or_crio = storage();
  if (podman_or_crio.named()) return podman_or_crio;
  return {std::nullopt, docker.settled || containerd.settled || podman_or_crio.settled};
}

ContainerNames::Found ContainerNames::from_storage_index(const std::string& id) {
  for (const fs::path& root : roots_.storage) {
    fs::path path = root / kStorageContainers / "containers.json";
    auto file = open_bounded(path, kMaxContainersJsonBytes);
    if (!file) {
      storage_indexes_.erase(path);
      continue;
    }
    const struct stat& info = file->info;
    StorageIndex& index = storage_indexes_[path];
    if (index.device != info.st_dev || index.inode != info.st_ino || index.size != info.st_size ||
        index.modified.tv_sec != info.st_mtim.tv_sec ||
        index.modified.tv_nsec != info.st_mtim.tv_nsec) {
      auto text = read_bounded(*file, kMaxContainersJsonBytes);
      index = StorageIndex{info.st_dev, info.st_ino, info.st_size, info.st_mtim,
                           text ? storage_container_names(*text)
                                : std::map<std::string, std::string, std::less<>>{}};
    }
    if (auto name = index.names.find(id); name != index.names.end()) {
      ContainerMetadata metadata;
      metadata.name = name->second;
      return {std::move(metadata), true};
    }
  }
  return {};
}

}  // namespace dormant::inventory
