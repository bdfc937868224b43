#include "server/control/request_checks.h"

#include <algorithm>
#include <string>

#include "server/storage/combined_config.h"

namespace dormant::server::control {

using storage::is_reserved_config_key;
using storage::PidList;
using storage::StartRequest;
using storage::StopLevel;
using storage::StopRequest;
using storage::TargetHosts;

namespace {

Result<void> check_common(const std::optional<std::string>& request_id,
                          const std::string& service_name, TargetHosts& target_hosts) {
  if (request_id && request_id->empty()) return Error::invalid_argument("request_id is empty");
  if (service_name.empty()) return Error::invalid_argument("service_name is empty");
  if (target_hosts.empty()) {
    return Error::invalid_argument("target_hosts names no host");
  }
  if (target_hosts.size() > kMaxTargetHosts) {
    // As the protocol says it (kMaxListItems), for callers that come another way.
    return Error::invalid_argument("target_hosts: must have at most " +
                                   std::to_string(kMaxTargetHosts) + " hosts");
  }
  for (auto& [hostname, pids] : target_hosts) {
    if (hostname.empty()) return Error::invalid_argument("target_hosts has an empty hostname");
    if (!pids) continue;
    if (pids->empty()) {
      return Error::invalid_argument("the pid list for host " + hostname +
                                     " is empty; null stands for the whole host");
    }
    for (pid_t pid : *pids) {
      if (pid <= 0) {
        return Error::invalid_argument("pid " + std::to_string(pid) + " for host " + hostname +
                                       " is not a process id");
      }
    }
    std::sort(pids->begin(), pids->end());
    pids->erase(std::unique(pids->begin(), pids->end()), pids->end());
  }
  return ok();
}

}  // namespace

Result<StartRequest> checked_start(StartRequest request) {
  if (auto common = check_common(request.request_id, request.service_name, request.target_hosts);
      !common) {
    return std::move(common).take_error();
  }
  if (request.duration_s <= 0) {
    return Error::invalid_argument("duration must be positive, not " +
                                   std::to_string(request.duration_s));
  }
  if (request.frequency_hz <= 0) {
    return Error::invalid_argument("frequency must be positive, not " +
                                   std::to_string(request.frequency_hz));
  }
  if (request.additional_args.is_null()) request.additional_args = nlohmann::json::object();
  if (!request.additional_args.is_object()) {
    return Error::invalid_argument("additional_args must be a JSON object");
  }
  for (const auto& [key, value] : request.additional_args.items()) {
    if (is_reserved_config_key(key)) {
      return Error::invalid_argument("additional_args may not set \"" + key +
                                     "\": it is a field of the request itself");
    }
  }
  return request;
}

Result<StopRequest> checked_stop(StopRequest request) {
  if (auto common = check_common(request.request_id, request.service_name, request.target_hosts);
      !common) {
    return std::move(common).take_error();
  }
  for (const auto& [hostname, pids] : request.target_hosts) {
    if (request.level == StopLevel::kHost && pids) {
      return Error::invalid_argument("a host-level stop takes no pids, but host " + hostname +
                                     " has some; use a process-level stop to stop pids");
    }
    if (request.level == StopLevel::kProcess && !pids) {
      return Error::invalid_argument("a process-level stop needs pids, but host " + hostname +
                                     " has none; use a host-level stop for the whole host");
    }
  }
  return request;
}

}  // namespace dormant::server::control
