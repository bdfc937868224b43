#include "server/storage/records.h"

namespace dormant::server::storage {

int64_t to_unix_ms(TimePoint time) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count();
}

TimePoint from_unix_ms(int64_t ms) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::milliseconds(ms)));
}

}  // namespace dormant::server::storage
