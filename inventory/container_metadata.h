// The container a process runs in: its runtime, name, pod and labels, for a profile's container
// frame and for the heartbeat's inventory of what runs on the host.
//
// They come from the files each runtime keeps on the host, so they are known without a running
// daemon or its socket:
//   docker      <docker>/containers/<id>/config.v2.json: "Name" without its '/';
//   containerd  <tasks>/<namespace>/<id>/config.json, the OCI bundle: the Kubernetes CRI
//               annotations, or nerdctl's "nerdctl/name";
//   CRI-O       <storage>/overlay-containers/<id>/userdata/config.json: the Kubernetes
//               annotations;
//   podman      (and CRI-O when that fails) the first of the container's "names" in
//               <storage>/overlay-containers/containers.json, containers/storage's index.
// These files are outside input: no more than 1 MiB of a config and 8 MiB of a containers.json
// is read, links and special files are not, and an id is 64 hex digits before it is a path.
// A Kubernetes container is named "<namespace>/<pod>/<container>" whatever its runtime (docker
// included, from its io.kubernetes.* labels): one readable form that stays the same across the
// container's restarts and across runtimes, and that a pod's containers share as a prefix.
// gProfiler names CRI containers as dockershim did, "k8s_<container>_<pod>_<namespace>_<uid>_
// <restarts>"; containerd's bundle holds no restart count, so that form cannot be rebuilt from
// files. Any other container takes its runtime's name; where none can be read (no file yet, a
// malformed or oversized one, a runtime or storage root not listed), its short id: the first 12
// of its 64 hex digits, as `docker ps` shows them.
#pragma once

#include <ctime>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "inventory/container_cgroups.h"
#include "inventory/process_cgroups.h"

namespace dormant::inventory {

// Label (or annotation) key → value; at most kMaxLabels of them, each usable as a name.
using Labels = std::map<std::string, std::string, std::less<>>;
inline constexpr size_t kMaxLabels = 128;

// The container holding a process with these cgroups: the container's own cgroup or any cgroup
// below it, in the v2 hierarchy or any v1 one (hybrid hosts often have it in v1 only).
std::optional<ContainerCgroup> container_of(const ProcessCgroups& cgroups);

// What the runtime's files say of one container. Kubernetes' names are known for a container of a
// pod whatever its runtime; labels only where the runtime keeps them on the host: docker (the
// container's and its pod sandbox's), CRI-O (io.kubernetes.cri-o.Labels of the container and of
// its sandbox). containerd's bundles hold no labels.
struct ContainerMetadata {
  std::string id;       // 64 hex digits
  std::string runtime;  // "docker", "containerd", "cri-o", "podman"; "" unknown
  std::string name;     // Kubernetes' container name, else the runtime's
  std::optional<std::string> pod_namespace;
  std::optional<std::string> pod_name;
  Labels pod_labels;  // the pod sandbox's labels (pod labels)
  Labels container_labels;

  // The name for a profile's container frame (see the top of this file).
  std::string frame_name() const;

  friend bool operator==(const ContainerMetadata&, const ContainerMetadata&) = default;
};

// The container in a docker config.v2.json. nullopt when the text is not such a file.
// settled-with-no-name cases give a ContainerMetadata with an empty name.
std::optional<ContainerMetadata> docker_metadata(std::string_view config_json);
// The container in an OCI bundle's config.json, from its annotations: Kubernetes' (the CRI plugin
// of containerd: io.kubernetes.cri.*; CRI-O: io.kubernetes.container.name, …pod.name,
// …pod.namespace, io.kubernetes.cri-o.Labels), else nerdctl's "nerdctl/name".
std::optional<ContainerMetadata> oci_bundle_metadata(std::string_view config_json);

// The frame names of the two above: the Kubernetes form when its labels say it is one, else the
// runtime's name (docker's "Name" without its leading '/'). nullopt when there is none, or it is
// empty or could break a collapsed line.
std::optional<std::string> docker_container_name(std::string_view config_json);
std::optional<std::string> oci_bundle_name(std::string_view config_json);

// id → first name of every container in a containers/storage containers.json (podman, CRI-O).
// Entries without a valid id or name are left out; an empty map when the text is malformed.
std::map<std::string, std::string, std::less<>> storage_container_names(
    std::string_view containers_json);

// Where the runtimes keep their state. Tests point them at fake trees.
struct ContainerRoots {
  std::filesystem::path docker = "/var/lib/docker";
  // containerd's v2 shim bundles, one folder per namespace ("k8s.io", "default", …); k3s runs
  // its own containerd.
  std::vector<std::filesystem::path> containerd_tasks = {
      "/run/containerd/io.containerd.runtime.v2.task",
      "/run/k3s/containerd/io.containerd.runtime.v2.task"};
  // containers/storage graph and run roots, as podman (rootful) and CRI-O keep them.
  std::vector<std::filesystem::path> storage = {"/var/lib/containers/storage",
                                                "/run/containers/storage"};
};

class ContainerNames {
 public:
  // Of the labels, only those with one of `kept_labels` are kept (none by default): a host's
  // containers can carry many, and only a few name a workload.
  explicit ContainerNames(ContainerRoots roots = {}, std::vector<std::string> kept_labels = {})
      : roots_(std::move(roots)), kept_labels_(kept_labels.begin(), kept_labels.end()) {}
  // The docker data root given, the other runtimes' at their defaults.
  explicit ContainerNames(std::filesystem::path docker_root)
      : ContainerNames(ContainerRoots{.docker = std::move(docker_root)}) {}

  // "" for a process outside containers or one that has exited. Never throws.
  std::string of_pid(pid_t pid);
  // The frame name of this container (see the top of this file); the runtime its cgroup told, if
  // any, says which files to read.
  std::string name_of(const ContainerCgroup& container);
  // The same for an id whose runtime is not known: every runtime's files are tried. "" when `id`
  // is not 64 hex digits.
  std::string name_of(const std::string& id);
  // All that the runtime's files say of it; its name is the short id where they name none.
  // nullopt when `container.id` is not 64 hex digits. Never throws.
  std::optional<ContainerMetadata> metadata_of(const ContainerCgroup& container);

  // What one lookup found: metadata with a name; or a well-formed file that names none (the short
  // id stands in for good); or nothing yet: no file (a container still starting), a malformed one
  // (perhaps caught half-written), read again next time.
  struct Found {
    std::optional<ContainerMetadata> metadata;
    bool settled = false;
    bool named() const { return metadata && !metadata->name.empty(); }
  };

 private:
  // One containers.json, parsed once per version of the file.
  struct StorageIndex {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    timespec modified{};
    std::map<std::string, std::string, std::less<>> names;
  };

  Found lookup(const ContainerCgroup& container);
  Found from_storage_index(const std::string& id);
  ContainerMetadata settle(const ContainerCgroup& container, Found found);

  ContainerRoots roots_;
  std::set<std::string, std::less<>> kept_labels_;
  // id → what was read, once. Cleared when it reaches its bound: it is cheap to read again.
  std::map<std::string, ContainerMetadata, std::less<>> metadata_;
  std::map<std::filesystem::path, StorageIndex> storage_indexes_;
};

}  // namespace dormant::inventory
