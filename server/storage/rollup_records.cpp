#include "server/storage/rollup_records.h"

#include <algorithm>

#include "common/text.h"

namespace dormant::server::storage {
namespace {

// Kubernetes' generated suffixes use consonants and digits that cannot spell words.
bool is_generated(std::string_view part, size_t min_size, size_t max_size) {
  constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  return part.size() >= min_size && part.size() <= max_size &&
         std::all_of(part.begin(), part.end(),
                     [&](char c) { return kAlphabet.find(c) != std::string_view::npos; });
}

// A pod's name without the pod's random suffix and its ReplicaSet's hash.
std::string_view pod_owner(std::string_view pod) {
  size_t dash = pod.rfind('-');
  if (dash == std::string_view::npos || !is_generated(pod.substr(dash + 1), 5, 5)) return pod;
  pod = pod.substr(0, dash);
  dash = pod.rfind('-');
  if (dash != std::string_view::npos && is_generated(pod.substr(dash + 1), 6, 10)) {
    pod = pod.substr(0, dash);
  }
  return pod;
}

}  // namespace

std::chrono::hours RollupRetention::of(Resolution resolution) const {
  switch (resolution) {
    case Resolution::kMinute:
      return minute;
    case Resolution::kHour:
      return hour;
    case Resolution::kDay:
      return day;
  }
  return day;
}

std::string label_value(const LabelKey& key, Label label) {
  switch (label) {
    case Label::kHostName:
      return key.hostname;
    case Label::kContainerName:
      return key.container;
    case Label::kContainerEnvName:
      return container_env_name(key.container);
    case Label::kInstanceType:
      return key.instance_type;
    case Label::kPodName:
    case Label::kNamespace:
      if (auto names = kubernetes_names(key.container)) {
        return std::string(label == Label::kPodName ? names->pod : names->namespace_name);
      }
      return "";
  }
  return "";
}

std::string_view label_name(Label label) {
  switch (label) {
    case Label::kHostName:
      return "host";
    case Label::kContainerName:
      return "container";
    case Label::kContainerEnvName:
      return "deployment";
    case Label::kInstanceType:
      return "instance type";
    case Label::kPodName:
      return "pod";
    case Label::kNamespace:
      return "namespace";
  }
  return "label";
}

bool LabelFilter::matches(const LabelKey& key) const {
  auto holds = [&](const LabelRule& rule) {
    return (label_value(key, rule.label) == rule.value) == rule.equal;
  };
  if (rules.empty()) return true;
  return any ? std::any_of(rules.begin(), rules.end(), holds)
             : std::all_of(rules.begin(), rules.end(), holds);
}

std::optional<std::string> LabelFilter::required_host() const {
  if (any && rules.size() != 1) return std::nullopt;
  for (const LabelRule& rule : rules) {
    if (rule.label == Label::kHostName && rule.equal) return rule.value;
  }
  return std::nullopt;
}

std::optional<KubernetesNames> kubernetes_names(std::string_view container) {
  if (auto parts = split(container, '/'); parts.size() == 3 && !parts[0].empty()) {
    return KubernetesNames{parts[0], parts[1]};
  }
  auto parts = split(container, '_');
  if (parts.size() == 6 && parts[0] == "k8s") return KubernetesNames{parts[3], parts[2]};
  if (parts.size() == 3 && !parts[2].empty()) return KubernetesNames{parts[2], parts[1]};
  return std::nullopt;
}

std::string container_env_name(std::string_view container) {
  auto names = kubernetes_names(container);
  if (!names) return std::string(container);
  return std::string(pod_owner(names->pod)) + "_" + std::string(names->namespace_name);
}

}  // namespace dormant::server::storage
