// Result<T>: the value of a fallible operation, or the Error that explains why it failed.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dormant {

enum class ErrorKind {
  kSystem,           // a system call failed; errno is set
  kParse,            // outside input did not have the expected form
  kInvalidArgument,  // a caller or a user asked for something impossible
  kNotFound,         // a file, process or resource does not exist
  kTimeout,          // a deadline passed
  kTls,              // TLS handshake or certificate problem
  kNetwork,          // connection, resolution or protocol problem
  kBpf,              // BPF load, verify or attach problem
  kUnavailable,      // a facility the host does not offer
  kCancelled,        // the operation was interrupted on purpose
  kConflict,         // a concurrent change won; the operation may be run again
};

std::string_view to_string(ErrorKind kind);

class Error {
 public:
  Error(ErrorKind kind, std::string message, int sys_errno = 0)
      : kind_(kind), message_(std::move(message)), errno_(sys_errno) {}

  // "open(/etc/x): No such file or directory".
  static Error from_errno(std::string_view call, int sys_errno = errno);
  static Error parse(std::string message) { return {ErrorKind::kParse, std::move(message)}; }
  static Error invalid_argument(std::string message) {
    return {ErrorKind::kInvalidArgument, std::move(message)};
  }

  ErrorKind kind() const { return kind_; }
  int sys_errno() const { return errno_; }
  const std::string& message() const { return message_; }

  // What was wrong with each part of an input, where a parser names the parts: "where" is the
  // part ("target_hosts['web-01'][2]"), "what" the problem. Empty for other errors.
  struct Problem {
    std::string where;
    std::string what;
    friend bool operator==(const Problem&, const Problem&) = default;
  };
  const std::vector<Problem>& problems() const { return problems_; }
  // The error of one problem with a part: "<where>: <what>".
  static Error problem(ErrorKind kind, std::string where, std::string what);
  // Adds `other`'s problems (or, without any, its message) to this error's; the message lists
  // them all, "; "-separated.
  void add_problems_of(const Error& other);

  // Prefixes the message with what the caller was doing: "reading config: <message>".
  Error&& with_context(std::string_view context) &&;

 private:
  ErrorKind kind_;
  std::string message_;
  int errno_;
  std::vector<Problem> problems_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  const Error& error() const { return std::get<1>(state_); }
  Error&& take_error() && { return std::get<1>(std::move(state_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }
  Error&& take_error() && { return std::move(error_); }

 private:
  Error error_{ErrorKind::kInvalidArgument, {}};
  bool ok_ = true;
};

inline Result<void> ok() { return {}; }

}  // namespace dormant
