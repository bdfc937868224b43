#include "inventory/workload_identity.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace dormant::inventory {
namespace {

constexpr std::array<std::string_view, 4> kStandardNameLabels = {
    "app.kubernetes.io/name", "app.kubernetes.io/instance", "app", "k8s-app"};

// The characters of the random parts Kubernetes adds to names (k8s.io/apimachinery's
// util/rand): no vowels, no digits that look like letters.
bool is_random_character(char c) {
  return std::string_view("bcdfghjklmnpqrstvwxz2456789").find(c) != std::string_view::npos;
}

bool all_random(std::string_view text) {
  return std::all_of(text.begin(), text.end(), is_random_character);
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

bool is_placeholder(std::string_view value) {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.empty() || lower == "unknown" || lower == "none";
}

// The first of `keys` with a value that names something: in the pod's labels, then the
// container's.
std::optional<std::string> first_label(const ContainerMetadata& container,
                                       const std::vector<std::string_view>& keys) {
  for (const Labels* labels : {&container.pod_labels, &container.container_labels}) {
    for (std::string_view key : keys) {
      auto found = labels->find(key);
      if (found != labels->end() && !is_placeholder(found->second)) return found->second;
    }
  }
  return std::nullopt;
}

}  // namespace

PodNameParts split_pod_name(std::string_view pod_name) {
  size_t last = pod_name.rfind('-');
  if (last == std::string_view::npos || last == 0) return {std::string(pod_name), std::nullopt};
  std::string_view head = pod_name.substr(0, last);
  std::string_view tail = pod_name.substr(last + 1);
  if (tail.size() == 5 && all_random(tail)) {
    size_t hash_at = head.rfind('-');
    if (hash_at != std::string_view::npos && hash_at != 0) {
      std::string_view hash = head.substr(hash_at + 1);
      if (hash.size() >= 6 && hash.size() <= 10 && all_random(hash)) {
        return {std::string(head.substr(0, hash_at)), "Deployment"};
      }
    }
  }
  if (all_digits(tail)) return {std::string(head), "StatefulSet"};
  if (tail.size() == 5 && all_random(tail)) return {std::string(head), "DaemonSet"};
  return {std::string(pod_name), std::nullopt};
}

std::vector<std::string> workload_label_keys(const WorkloadLabelKeys& keys) {
  std::vector<std::string> all = keys.name;
  all.insert(all.end(), kStandardNameLabels.begin(), kStandardNameLabels.end());
  all.insert(all.end(), keys.kind.begin(), keys.kind.end());
  return all;
}

Workload workload_of(const ContainerMetadata& container, const WorkloadLabelKeys& keys) {
  Workload workload;
  std::vector<std::string_view> name_keys(keys.name.begin(), keys.name.end());
  name_keys.insert(name_keys.end(), kStandardNameLabels.begin(), kStandardNameLabels.end());
  workload.name = first_label(container, name_keys);
  std::optional<PodNameParts> pod;
  if (container.pod_name) pod = split_pod_name(*container.pod_name);
  if (!workload.name && pod) workload.name = pod->workload;

  workload.kind = first_label(container, {keys.kind.begin(), keys.kind.end()});
  if (workload.kind) return workload;
  if (!container.pod_name && !container.pod_namespace) {
    workload.kind = "container";
  } else {
    workload.kind = pod && pod->kind ? *pod->kind : "k8s";
  }
  return workload;
}

}  // namespace dormant::inventory
