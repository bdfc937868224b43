// A profile upload's body (POST /api/v2/profiles, docs/protocol.md): gzip'd or plain JSON, read
// within a bound, and the profile in it checked before it is stored.
#pragma once

#include <cstddef>
#include <string_view>
#include <variant>

#include "common/result.h"
#include "server/http/http_server.h"
#include "server/storage/records.h"
#include "wire/protocol.h"

namespace dormant::server::api {

// The upload's fields from its body; or the answer that refuses it: 400 for what is not gzip or
// JSON, 413 past `max_profile_bytes` inflated, 422 for fields that are not an upload. Gzip is
// parsed as it inflates and the profile is moved out of the tree, so that an upload holds about
// one copy of its profile besides the parser's.
std::variant<wire::ProfileUpload, http::Response> read_upload_body(const http::Request& request,
                                                                   size_t max_profile_bytes);

// The upload as the store keeps it, once its times, its header and every line of its profile
// are checked, and its samples found plausible for its duration.
Result<storage::ProfileUpload> to_stored_upload(wire::ProfileUpload&& upload,
                                                std::string_view service);

}  // namespace dormant::server::api
