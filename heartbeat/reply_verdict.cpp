#include "heartbeat/reply_verdict.h"

namespace dormant::heartbeat {

ReplyVerdict verdict_of(unsigned status) {
  if (status >= 200 && status < 300) return ReplyVerdict::kDelivered;
  switch (status) {
    case 400:  // Bad Request
    case 413:  // Content Too Large
    case 415:  // Unsupported Media Type
    case 422:  // Unprocessable Content
      return ReplyVerdict::kRejected;
    default:
      return ReplyVerdict::kRetry;
  }
}

}  // namespace dormant::heartbeat
