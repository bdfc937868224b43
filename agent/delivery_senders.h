// What the agent owes the server, delivered in the background on the I/O thread: the command
// completions in the journal and the profiles in the spool, each oldest first, each retried with
// backoff until the server takes (or definitively refuses) it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "agent/command_journal.h"
#include "agent/profile_spool.h"
#include "heartbeat/retrying_sender.h"

namespace dormant::agent {

// POST /api/metrics/command_completion for each completion the journal owes; settled when the
// server answers (a {"success": false} answer too: the server's first report stands).
std::shared_ptr<heartbeat::RetryingSender> make_completion_sender(
    boost::asio::io_context& io, std::shared_ptr<heartbeat::HttpsClient> client,
    heartbeat::RetryTimer retry, CommandJournal& journal);

struct UploadIdentity {
  std::string token;
  std::string service_name;
  std::string hostname;
  std::string agent_version;
};

// POST /api/v2/profiles for each spooled profile, with gProfiler's headers and query, and the
// gpid of the previous answer in the body.
std::shared_ptr<heartbeat::RetryingSender> make_upload_sender(
    boost::asio::io_context& io, std::shared_ptr<heartbeat::HttpsClient> client,
    heartbeat::RetryTimer retry, ProfileSpool& spool, UploadIdentity identity);

}  // namespace dormant::agent
