#include "profile/profile_header.h"

#include <optional>

#include <unistd.h>

#include "common/iso_time.h"
#include "common/text.h"

namespace dormant::profile {

nlohmann::json make_profile_header(const HostInfo& host, const SnapshotInfo& snapshot) {
  std::string deployment_type = snapshot.run_mode == "k8s"         ? "k8s"
                                : snapshot.run_mode == "container" ? "containers"
                                                                   : "instances";
  nlohmann::json metadata = {
      {"hostname", host.hostname},
      {"system_name", host.system_name},
      {"system", host.system_name},
      {"kernel_release", host.kernel_release},
      {"kernel_version", host.kernel_version},
      {"hardware_type", host.hardware_type},
      {"os_name", host.os_name},
      {"os_release", host.os_release},
      {"os_codename", host.os_codename},
      {"cpu_model_name", host.cpu_model_name},
      {"cpu_flags", host.cpu_flags},
      {"processors", host.processors},
      {"memory_capacity_mb", host.memory_capacity_mb},
      {"libc_type", host.libc_type},
      {"libc_version", host.libc_version},
      {"private_ip", host.private_ip},
      {"mac_address", host.mac_address},
      {"cloud_provider", "Unknown"},
      {"cloud_info", nlohmann::json::object()},
      {"python_version", ""},
      {"run_mode", snapshot.run_mode},
      {"deployment_type", deployment_type},
      {"pid", ::getpid()},
      {"agent_version", snapshot.agent_version},
      {"spawn_time", snapshot.spawn_time},
      {"spawn_uptime_ms", snapshot.spawn_uptime_ms},
      {"run_arguments", snapshot.run_arguments},
      {"big_data", nlohmann::json::object()},
      {"external_metadata", nlohmann::json::object()},
      {"current_time", dormant::iso_utc(snapshot.current_time)},
      {"profiling_mode", snapshot.profiling_mode},
  };
  return {
      {"containers", snapshot.containers},
      {"container_names_enabled", true},
      {"metadata", metadata},
      {"metrics", {{"cpu_avg", snapshot.cpu_avg}, {"mem_avg", snapshot.mem_avg}}},
      {"application_metadata", nlohmann::json::array({nullptr})},
      {"application_metadata_enabled", true},  // each line opens with its index, "0"
      {"profiling_mode", snapshot.profiling_mode},
      {"hwmetrics", nullptr},
      {"htmlblob", nullptr},
      {"flamegraph_html", nullptr},
  };
}

uint64_t header_frequency(const nlohmann::json& header) {
  const nlohmann::json* at = &header;
  for (const char* key : {"metadata", "run_arguments", "frequency"}) {
    if (!at->is_object()) return 0;
    auto found = at->find(key);
    if (found == at->end()) return 0;
    at = &*found;
  }
  if (at->is_number_unsigned()) return at->get<uint64_t>();
  std::optional<int64_t> frequency;
  if (at->is_number_integer()) frequency = at->get<int64_t>();
  if (at->is_string()) frequency = parse_integer(at->get_ref<const std::string&>());
  return frequency && *frequency > 0 ? static_cast<uint64_t>(*frequency) : 0;
}

}  // namespace dormant::profile
