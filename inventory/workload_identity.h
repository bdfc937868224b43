// Which workload a container belongs to, in Kubernetes' terms: a name people select by (a
// Deployment's, a StatefulSet's, an app's) and its kind, found the way gProfiler finds them.
//
// The name is the first label that names it: the configured keys, then app.kubernetes.io/name,
// app.kubernetes.io/instance, app and k8s-app, looked up in the pod's labels before the
// container's (a pod's label wins over its container's); a value of "", "unknown" or "none" (in
// any case) names nothing. Without such a label, the pod's name without the suffix its controller
// added: "<name>-<template hash>-<5>" (a ReplicaSet's pod, so a Deployment's), "<name>-<ordinal>"
// (a StatefulSet's), "<name>-<5>" (a DaemonSet's or another generateName), where the random parts
// are drawn from Kubernetes' alphabet without vowels (so "-redis" or "-mysql" are never taken for
// one); else the pod's name itself. A container of no pod has a name only from its labels.
//
// The kind is the first configured kind label; else "container" for a container outside
// Kubernetes; else Deployment, StatefulSet or DaemonSet by the pod name's suffix; else "k8s".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inventory/container_metadata.h"

namespace dormant::inventory {

struct WorkloadLabelKeys {
  std::vector<std::string> name;  // tried before the standard keys
  std::vector<std::string> kind;  // the only kind labels: none is standard
};

struct Workload {
  std::optional<std::string> name;
  std::optional<std::string> kind;

  friend bool operator==(const Workload&, const Workload&) = default;
};

Workload workload_of(const ContainerMetadata& container, const WorkloadLabelKeys& keys = {});

// Every label key workload_of() may read with `keys`: the only labels worth keeping.
std::vector<std::string> workload_label_keys(const WorkloadLabelKeys& keys);

// The pod name without its controller's suffix, and the kind that suffix tells; the name as it
// is and no kind when it has none of those shapes.
struct PodNameParts {
  std::string workload;
  std::optional<std::string> kind;
};
PodNameParts split_pod_name(std::string_view pod_name);

}  // namespace dormant::inventory
