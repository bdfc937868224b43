// How the agent words an answer of the server that is not a success: the status, the server's
// own message whole (Studio's "detail" or our "message"), and what to check where a status
// usually means a mistake in the agent's configuration.
#pragma once

#include <string>

#include "heartbeat/https_client.h"

namespace dormant::heartbeat {

// "the server answered HTTP 401: <message>; <hint>". The message is the JSON body's "message"
// or "detail" text up to kMaxReplyMessageBytes, else an excerpt of the body.
std::string describe_reply(const HttpReply& reply);

inline constexpr size_t kMaxReplyMessageBytes = 1000;

}  // namespace dormant::heartbeat
