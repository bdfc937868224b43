// Logs a run of failures of one kind of request once: a warning at the first failure, debug lines
// for the next ones, and one line when it works again. An outage of hours then costs two lines.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace dormant::heartbeat {

class OutageLog {
 public:
  explicit OutageLog(std::string what) : what_(std::move(what)) {}

  // `failures` counts this one; `retry_in` is when the next attempt goes.
  void failed(int failures, const std::string& error, std::chrono::milliseconds retry_in) const;
  // `failures`: how many attempts had failed before this success (0: nothing to say).
  void recovered(int failures) const;

 private:
  std::string what_;
};

}  // namespace dormant::heartbeat
