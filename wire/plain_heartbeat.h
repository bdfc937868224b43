// A heartbeat read from its text, with containers[] going straight into structs when the list has
// the plain shape agents send: objects whose members are snake_case, each present once, of the
// types parse_heartbeat_request takes, and nothing else. Which members those are, which are
// required and where each is stored is the containers' and processes' field tables
// (protocol.cpp, message_fields.h). The rest of the body becomes a document as
// always. The list is most of a heartbeat's bytes, and the document nlohmann builds for it (a
// node per member, freed again at once) was most of the server's work on each heartbeat that
// carries one.
//
// Any other list (an alias, a null, an unknown or repeated member, a pid written 2.0, a bad
// value), and any text that is not JSON, is read the usual way, by parse_json_text and
// parse_heartbeat_request: same result, same errors, whichever way it went.
#pragma once

#include <optional>
#include <string_view>

#include "common/result.h"
#include "wire/protocol.h"

namespace dormant::wire {

// The heartbeat in `text`; errors name the body "heartbeat".
Result<HeartbeatRequest> parse_heartbeat_text(std::string_view text);

// The same when the list is plain and the heartbeat valid; nullopt otherwise. For tests.
std::optional<HeartbeatRequest> read_plain_heartbeat(std::string_view text);

}  // namespace dormant::wire
