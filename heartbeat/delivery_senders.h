// What the agent owes the server, delivered in the background on the I/O thread: command
// completions and profiles, each oldest first from its queue, each retried with backoff until
// the server takes (or definitively refuses) it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "heartbeat/delivery_queues.h"
#include "heartbeat/retrying_sender.h"

namespace dormant::heartbeat {

// POST /api/metrics/command_completion for each completion the journal owes; settled when the
// server answers (a {"success": false} answer too: the server's first report stands). `timer`
// waits out the backoffs (null: the steady clock).
std::shared_ptr<RetryingSender> make_completion_sender(
    boost::asio::io_context& io, std::shared_ptr<HttpsClient> client, RetryTimer retry,
    CompletionQueue& owed, std::unique_ptr<BackoffTimer> timer = nullptr);

struct UploadIdentity {
  std::string token;
  std::string service_name;
  std::string hostname;
  std::string agent_version;
};

// POST /api/v2/profiles for each queued profile, with gProfiler's headers and query, and the
// gpid of the previous answer in the body. A profile the server refuses for good goes to the
// queue's rejected ones.
std::shared_ptr<RetryingSender> make_upload_sender(boost::asio::io_context& io,
                                                   std::shared_ptr<HttpsClient> client,
                                                   RetryTimer retry, UploadQueue& queue,
                                                   const UploadIdentity& identity,
                                                   std::unique_ptr<BackoffTimer> timer = nullptr);

}  // namespace dormant::heartbeat
