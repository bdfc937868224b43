// The control layer's entry point: start and stop requests and heartbeats, turned into commands
// by the rules (request_checks.h, command_plan.h, subscription_follower.h) and kept by the store.
// Holds nothing of its own: safe to call from several threads, as the store is.
#pragma once

#include "common/result.h"
#include "server/storage/records.h"
#include "server/storage/store.h"

namespace dormant::server::control {

class Commands {
 public:
  explicit Commands(storage::Store& store) : store_(store) {}

  // Checks the request, then gives every target host its next command (command_plan.h); a
  // continuous start by selectors also subscribes, a stop by selectors ends subscriptions and a
  // stop of named hosts takes them out of the service's subscriptions. A request without an id
  // gets a new one.
  Result<storage::SubmitOutcome> submit_start(const storage::StartRequest& start);
  Result<storage::SubmitOutcome> submit_stop(const storage::StopRequest& stop);

  // Records the heartbeat, gives the host what its service's subscriptions pick on it now, and
  // answers its current command (storage::Store::record_heartbeat).
  Result<storage::HeartbeatAnswer> record_heartbeat(const storage::HostHeartbeat& heartbeat);

  storage::Store& store() { return store_; }

 private:
  storage::Store& store_;
};

}  // namespace dormant::server::control
