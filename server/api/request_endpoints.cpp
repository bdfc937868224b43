#include "server/api/request_endpoints.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <type_traits>
#include <vector>

#include "server/api/api_requests.h"
#include "server/api/listing_writer.h"
#include "server/api/perf_event_check.h"
#include "server/api/wire_mapping.h"
#include "server/control/request_checks.h"
#include "server/storage/subscription_rows.h"

namespace dormant::server::api {
namespace {

using boost::beast::http::verb;

constexpr size_t kMaxBulkRequests = 1000;

}  // namespace

std::vector<Route> RequestEndpoints::routes() {
  constexpr Roles kRead = kOperatorRole | kReaderRole;
  return {
      {verb::post, "/api/metrics/profile_request", Auth::kBearer, kOperatorRole, Work::kStore,
       Body::kBulk, handler(this, &RequestEndpoints::profile_request)},
      {verb::post, "/api/metrics/profile_request/bulk", Auth::kBearer, kOperatorRole, Work::kStore,
       Body::kBulk, handler(this, &RequestEndpoints::bulk_profile_request)},
      {verb::get, "/api/subscriptions", Auth::kBearer, kRead, Work::kStore, Body::kNone,
       handler(this, &RequestEndpoints::list_subscriptions)},
  };
}

RequestEndpoints::Prepared RequestEndpoints::prepare_request(const nlohmann::json& body,
                                                             std::optional<bool> dry_run) {
  auto request = wire::parse_profiling_request(body);
  if (!request) return invalid_input(request.error());
  if (dry_run) request->dry_run = *dry_run;
  if (!selects_by_entities(*request)) return PreparedRequest{std::move(*request), std::nullopt};
  auto query = to_target_query(*request, options_.active_window);
  if (!query) return invalid_input(query.error());
  auto targets = store_.resolve_targets(*query);
  if (!targets) return store_refusal(targets.error());
  if (targets->empty()) {
    return invalid_input(Error::problem(ErrorKind::kInvalidArgument, "target_entities",
                                        "No active targets were resolved for scope '" +
                                            std::string(wire::to_string(request->target_scope)) +
                                            "' in service '" + request->service_name + "'"));
  }
  take_resolved_targets(*request, *targets);
  return PreparedRequest{std::move(*request), std::move(*query)};
}

Result<std::optional<Error>> RequestEndpoints::check_perf_events(
    const wire::ProfilingRequest& request) {
  if (requested_perf_events(request).empty()) return std::optional<Error>();
  auto supported = store_.perf_events_of(request.service_name);
  if (!supported) return std::move(supported).take_error();
  return unsupported_perf_events(request, *supported);
}

RequestEndpoints::Submission RequestEndpoints::submit_request(const PreparedRequest& prepared) {
  const wire::ProfilingRequest& request = prepared.request;
  auto store_request = to_store_request(request, prepared.selected_by);
  if (!store_request) return invalid_input(store_request.error());
  auto outcome = std::visit(
      [&](const auto& typed) -> Result<storage::SubmitOutcome> {
        if constexpr (std::is_same_v<std::decay_t<decltype(typed)>, storage::StartRequest>) {
          return commands_.submit_start(typed);
        } else {
          return commands_.submit_stop(typed);
        }
      },
      *store_request);
  if (!outcome) return store_refusal(outcome.error());
  return to_profiling_response(request, *outcome, std::chrono::system_clock::now());
}

http::Response RequestEndpoints::profile_request(const Call& call) {
  auto body = json_body(call.request, "profile_request");
  if (!body) return invalid_request(body.error());
  Prepared prepared = prepare_request(*body, std::nullopt);
  if (auto* refused = std::get_if<Refusal>(&prepared)) return to_response(*refused);
  // Perf events are checked in bulk only, as Studio does: a single request goes to the agent,
  // which records the event, perf's software fallback for cycles, or fails saying why not.
  Submission submitted = submit_request(std::get<PreparedRequest>(prepared));
  if (auto* refused = std::get_if<Refusal>(&submitted)) return to_response(*refused);
  return json_ok(wire::to_json(std::get<wire::ProfilingResponse>(submitted)));
}

http::Response RequestEndpoints::bulk_profile_request(const Call& call) {
  auto body = json_body(call.request, "profile_request/bulk");
  if (!body) return invalid_request(body.error());
  if (!body->is_object()) {
    return invalid_request(Error::problem(ErrorKind::kParse, "", "must be an object"));
  }
  const nlohmann::json* requests = body->contains("requests") ? &(*body)["requests"] : nullptr;
  if (!requests || !requests->is_array() || requests->empty()) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "requests", "requests list cannot be empty"));
  }
  if (requests->size() > kMaxBulkRequests) {
    return invalid_request(
        Error::problem(ErrorKind::kInvalidArgument, "requests",
                       "must have at most " + std::to_string(kMaxBulkRequests) + " requests"));
  }
  std::optional<bool> dry_run;
  if (auto flag = body->find("dry_run"); flag != body->end() && !flag->is_null()) {
    if (!flag->is_boolean()) {
      return invalid_request(
          Error::problem(ErrorKind::kInvalidArgument, "dry_run", "must be true or false"));
    }
    dry_run = flag->get<bool>();
  }
  // Every start's perf events are checked before any request is submitted, as in Studio: one
  // host that lacks them refuses the whole batch.
  std::vector<Prepared> prepared;
  std::optional<Error> unsupported;
  for (size_t index = 0; index < requests->size(); ++index) {
    prepared.push_back(prepare_request((*requests)[index], dry_run));
    const auto* ready = std::get_if<PreparedRequest>(&prepared.back());
    if (!ready) continue;
    auto perf = check_perf_events(ready->request);
    if (!perf) return store_failure(perf.error());
    if (!*perf) continue;
    Error located = Error::problem(
        ErrorKind::kInvalidArgument,
        "requests[" + std::to_string(index) + "]." + (*perf)->problems().front().where,
        (*perf)->problems().front().what);
    if (unsupported) {
      unsupported->add_problems_of(located);
    } else {
      unsupported = std::move(located);
    }
  }
  if (unsupported) return invalid_request(*unsupported);
  // One cap on hosts for the whole body, as for one request: not that cap per request.
  size_t hosts = 0;
  for (const Prepared& ready : prepared) {
    if (const auto* request = std::get_if<PreparedRequest>(&ready)) {
      hosts += request->request.target_hosts.size();
    }
  }
  if (hosts > control::kMaxTargetHosts) {
    return invalid_request(Error::problem(ErrorKind::kInvalidArgument, "requests",
                                          "name " + std::to_string(hosts) +
                                              " hosts in all; a bulk request may name at most " +
                                              std::to_string(control::kMaxTargetHosts)));
  }
  nlohmann::json results = nlohmann::json::array();
  size_t successes = 0;
  for (size_t index = 0; index < requests->size(); ++index) {
    const nlohmann::json& item = (*requests)[index];
    nlohmann::json result = {{"index", index},
                             {"service_name", item.is_object() && item.contains("service_name") &&
                                                      item["service_name"].is_string()
                                                  ? item["service_name"]
                                                  : nlohmann::json("")},
                             {"response", nullptr},
                             {"error", nullptr}};
    Submission submitted = std::holds_alternative<Refusal>(prepared[index])
                               ? Submission(std::get<Refusal>(prepared[index]))
                               : submit_request(std::get<PreparedRequest>(prepared[index]));
    if (auto* refused = std::get_if<Refusal>(&submitted)) {
      result["success"] = false;
      result["error"] = refused->message;
    } else {
      ++successes;
      result["success"] = true;
      result["response"] = wire::to_json(std::get<wire::ProfilingResponse>(submitted));
    }
    results.push_back(std::move(result));
  }
  return json_ok({{"total_submitted", requests->size()},
                  {"successful_count", successes},
                  {"failed_count", requests->size() - successes},
                  {"results", std::move(results)}});
}

http::Response RequestEndpoints::list_subscriptions(const Call& call) {
  auto limit = integer_parameter(call, "limit", 1000, 1, 10'000);
  if (!limit) return invalid_request(limit.error(), "query");
  auto offset = integer_parameter(call, "after", 0, 0, 10'000'000);
  if (!offset) return invalid_request(offset.error(), "query");
  auto subscriptions = store_.list_subscriptions(*limit, *offset);
  if (!subscriptions) return store_failure(subscriptions.error());
  ListingWriter page("subscriptions");
  std::optional<std::string> next;
  for (const storage::Subscription& subscription : *subscriptions) {
    nlohmann::json covers = nullptr;
    if (!subscription.ended_at) {
      storage::TargetQuery query{subscription.service_name, subscription.spec.scope,
                                 subscription.spec.selectors, options_.active_window};
      auto targets = store_.resolve_targets(query);
      if (!targets) return store_failure(targets.error());
      nlohmann::json hosts = nlohmann::json::object();
      size_t processes = 0;
      for (const auto& [hostname, pids] : *targets) {
        if (std::binary_search(subscription.opted_out.begin(), subscription.opted_out.end(),
                               hostname)) {
          continue;
        }
        hosts[hostname] = pids ? nlohmann::json(*pids) : nlohmann::json(nullptr);
        processes += pids ? pids->size() : 0;
      }
      covers = {{"host_count", hosts.size()}, {"pid_count", processes}, {"hosts", hosts}};
    }
    nlohmann::json item = {
        {"subscription_id", subscription.subscription_id},
        {"service_name", subscription.service_name},
        {"target_scope", storage::to_string(subscription.spec.scope)},
        {"target_entities",
         wire::entities_in_camel_case(storage::selectors_to_json(subscription.spec.selectors))},
        {"request_id", subscription.request_id},
        {"active", !subscription.ended_at},
        {"created_at", iso_time(subscription.created_at)},
        {"ended_at", subscription.ended_at ? nlohmann::json(iso_time(*subscription.ended_at))
                                           : nlohmann::json(nullptr)},
        {"ended_by",
         subscription.ended_by ? nlohmann::json(*subscription.ended_by) : nlohmann::json(nullptr)},
        {"opted_out_hosts", subscription.opted_out},
        {"covers", std::move(covers)}};
    if (!page.add(item)) break;
  }
  // Past the page's bytes, or as many as asked for: the next page starts after them. The
  // subscriptions are listed in an order that only their ends change, an offset at most.
  if (page.items() < subscriptions->size() ||
      subscriptions->size() == static_cast<size_t>(*limit)) {
    next = std::to_string(*offset + static_cast<int64_t>(page.items()));
  }
  return json_text_ok(page.finish(next));
}

}  // namespace dormant::server::api
