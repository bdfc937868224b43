// Between the wire protocol (heartbeat/) and the store's records (server/storage/): the two are
// kept apart so that either can change without the other, and this is the only place that
// knows both. Plus the JSON the read endpoints answer with.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/records.h"
#include "wire/profiling_request.h"
#include "wire/protocol.h"

namespace dormant::server::api {

storage::HostHeartbeat to_host_heartbeat(const wire::HeartbeatRequest& request);

// The host's current command, re-sent on every heartbeat as Studio does.
wire::HeartbeatResponse to_heartbeat_response(const storage::HeartbeatAnswer& answer);

// Whether a request names its hosts through selectors (a scope other than host, or
// target_entities), to be resolved against the hosts' inventories first; then Studio ignores
// target_hosts, and so do we.
bool selects_by_entities(const wire::ProfilingRequest& request);
// The request's scope and selectors; a selector's id (a workload_status row's) is taken apart
// into the members its scope's rows are keyed by. An id of the wrong shape is an error.
Result<storage::TargetQuery> to_target_query(const wire::ProfilingRequest& request,
                                             std::chrono::milliseconds active_window);
// Puts what selectors resolved to in target_hosts. A stop at process level of whole hosts (a
// service or host scope) stops them whole. A start records its target_scope in additional_args,
// so that the command's combined_config carries it, as Studio's does.
void take_resolved_targets(wire::ProfilingRequest& request, const storage::TargetHosts& targets);

// A start or a stop for the store, for the hosts in target_hosts. `selected_by`: the scope and
// selectors they were resolved from: a continuous start by them subscribes, a stop by them ends
// the subscriptions they name. Without, a stop opts its hosts out of the service's
// subscriptions.
using StoreRequest = std::variant<storage::StartRequest, storage::StopRequest>;
Result<StoreRequest> to_store_request(
    const wire::ProfilingRequest& request,
    const std::optional<storage::TargetQuery>& selected_by = std::nullopt);

wire::ProfilingResponse to_profiling_response(const wire::ProfilingRequest& request,
                                              const storage::SubmitOutcome& outcome,
                                              storage::TimePoint now);

storage::CompletionReport to_completion_report(const wire::CommandCompletion& completion);

// For the read endpoints.
nlohmann::json to_json(const storage::Command& command);
nlohmann::json to_json(const storage::HostRecord& host);
nlohmann::json to_json(const storage::StoredProfile& profile);
nlohmann::json to_json(const storage::ProfilingRequestRecord& request);

// "2026-11-22T10:00:00.123Z".
std::string iso_time(storage::TimePoint time);

}  // namespace dormant::server::api
