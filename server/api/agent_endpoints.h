// The endpoints agents call: heartbeats (long-polled or not), command completions and profile
// uploads (docs/protocol.md).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "server/api/endpoint_context.h"
#include "server/api/router.h"
#include "server/control/commands.h"

namespace dormant::server::api {

class AgentEndpoints : private EndpointContext {
 public:
  AgentEndpoints(storage::Store& store, control::Commands& commands, ServerMetrics& metrics,
                 const ApiOptions& options)
      : EndpointContext(store, metrics, options), commands_(commands) {}

  std::vector<Route> routes();

 private:
  // A heartbeat recorded, or, at the end of a long-poll's wait, its host's command delivered.
  http::Response heartbeat(const Call& call);
  // A heartbeat's answer: its host's command, and whether that is news to its agent.
  http::Response heartbeat_answer(const Call& call, const wire::HeartbeatRequest& message,
                                  const storage::HeartbeatAnswer& answer);
  http::Response command_completion(const Call& call);
  http::Response upload_profile(const Call& call);
  // With bind_hostname_to_certificate, the 403 for a request that speaks for `hostname` with a
  // certificate that does not name it.
  std::optional<http::Response> refuse_other_host(const Call& call,
                                                  std::string_view hostname) const;

  control::Commands& commands_;
};

}  // namespace dormant::server::api
