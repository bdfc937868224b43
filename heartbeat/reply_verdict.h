// What a delivery does with the server's answer. Only a message the server will never take is
// given up: one it calls malformed (400), too large (413), of the wrong type (415) or invalid
// (422). Every other answer that is not a success keeps the message for a later try: a
// redirect, a token not (yet) taken (401, 403, 407), a path not (yet) served (404), a timeout,
// a misdirected or early request (421, 425), throttling (429), a server error, as a network
// error does. A server that is misconfigured for an hour must not cost the profiles of that hour.
#pragma once

namespace dormant::heartbeat {

enum class ReplyVerdict { kDelivered, kRetry, kRejected };

ReplyVerdict verdict_of(unsigned status);

}  // namespace dormant::heartbeat
