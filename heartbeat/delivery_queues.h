// What the agent owes the server, as the senders see it: queues kept where they survive a
// restart (the agent's command journal and upload spool implement them), read oldest first.
#pragma once

#include <optional>
#include <string>

#include "wire/compressed_upload.h"
#include "wire/protocol.h"

namespace dormant::heartbeat {

class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;
  virtual std::optional<wire::CommandCompletion> oldest_owed() const = 0;
  // Delivered: no longer owed.
  virtual void settle(const std::string& command_id) = 0;
  // Refused for good by the server (`why`): no longer owed, kept aside for a person to look at.
  virtual void reject(const std::string& command_id, const std::string& why) = 0;
};

struct QueuedUpload {
  std::string key;  // what remove_upload takes
  wire::CompressedUpload upload;
};

class UploadQueue {
 public:
  virtual ~UploadQueue() = default;
  // An entry that cannot be read is dropped (with an error logged) and the next one given.
  virtual std::optional<QueuedUpload> oldest_upload() = 0;
  virtual void remove_upload(const std::string& key) = 0;
  // Refused for good by the server (`why`): out of the queue, kept aside for a person to look at.
  virtual void reject_upload(const std::string& key, const std::string& why) = 0;
};

}  // namespace dormant::heartbeat
