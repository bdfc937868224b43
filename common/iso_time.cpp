#include "common/iso_time.h"

#include <cstdio>
#include <ctime>

namespace dormant {

std::string iso_utc(std::chrono::system_clock::time_point time, bool with_millis) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  if (!with_millis) return text;
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()) % 1000;
  char fraction[8];
  std::snprintf(fraction, sizeof(fraction), ".%03d", static_cast<int>(millis.count()));
  return std::string(text) + fraction;
}

}  // namespace dormant
