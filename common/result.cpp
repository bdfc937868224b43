#include "common/result.h"

#include <cstring>

namespace dormant {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kSystem:
      return "system";
    case ErrorKind::kParse:
      return "parse";
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kTimeout:
      return "timeout";
    case ErrorKind::kTls:
      return "tls";
    case ErrorKind::kNetwork:
      return "network";
    case ErrorKind::kBpf:
      return "bpf";
    case ErrorKind::kUnavailable:
      return "unavailable";
    case ErrorKind::kCancelled:
      return "cancelled";
    case ErrorKind::kConflict:
      return "conflict";
  }
  return "unknown";
}

Error Error::from_errno(std::string_view call, int sys_errno) {
  std::string message(call);
  message += ": ";
  message += std::strerror(sys_errno);
  ErrorKind kind = sys_errno == ENOENT || sys_errno == ESRCH ? ErrorKind::kNotFound
                   : sys_errno == ETIMEDOUT                  ? ErrorKind::kTimeout
                                                             : ErrorKind::kSystem;
  return {kind, std::move(message), sys_errno};
}

Error Error::problem(ErrorKind kind, std::string where, std::string what) {
  Error error(kind, where + ": " + what);
  error.problems_.push_back({std::move(where), std::move(what)});
  return error;
}

void Error::add_problems_of(const Error& other) {
  message_ += "; ";
  message_ += other.message_;
  if (other.problems_.empty()) {
    problems_.push_back({"", other.message_});
  } else {
    problems_.insert(problems_.end(), other.problems_.begin(), other.problems_.end());
  }
}

Error&& Error::with_context(std::string_view context) && {
  message_.insert(0, ": ");
  message_.insert(0, context);
  return std::move(*this);
}

}  // namespace dormant
