// Studio's optional text members of a containers[] item: their snake_case wire names, the
// camelCase aliases its model also takes, and where ReportedContainer keeps each. protocol.cpp
// reads and writes them by this table, plain_heartbeat.cpp reads them by it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "wire/protocol.h"

namespace dormant::wire {

struct ContainerText {
  std::string_view name;
  std::string_view alias;
  std::optional<std::string> ReportedContainer::*member;
};
inline constexpr ContainerText kContainerTexts[] = {
    {"container_id", "containerId", &ReportedContainer::container_id},
    {"runtime", "runtime", &ReportedContainer::runtime},
    {"namespace", "namespace", &ReportedContainer::pod_namespace},
    {"pod_name", "podName", &ReportedContainer::pod_name},
    {"workload_name", "workloadName", &ReportedContainer::workload_name},
    {"workload_kind", "workloadKind", &ReportedContainer::workload_kind}};

}  // namespace dormant::wire
