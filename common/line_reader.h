// LineReader: splits what arrives on a file descriptor into lines without ever holding more than
// one buffer of it, however much the writer sends.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "common/deadline.h"
#include "common/result.h"

namespace dormant {

class LineReader {
 public:
  static constexpr size_t kDefaultMaxLine = 1 << 20;

  // Does not own `fd`. Lines longer than `max_line` bytes come out in pieces of `max_line`.
  explicit LineReader(int fd, size_t max_line = kDefaultMaxLine);

  // The next line without its '\n' (a last line without one counts too), valid until the next
  // call; nullopt at end of input. A timeout error when `deadline` passes first.
  Result<std::optional<std::string_view>> next(Deadline deadline = kNoDeadline);

  // For callers that poll several descriptors themselves: a complete line already buffered...
  std::optional<std::string_view> take_line();
  // ...and one read(2) into the buffer: false at end of input.
  Result<bool> fill();

  int fd() const { return fd_; }
  bool at_eof() const { return eof_; }
  size_t split_lines() const { return split_lines_; }  // pieces cut at max_line
  size_t bytes_read() const { return bytes_read_; }

 private:
  int fd_;
  size_t max_line_;
  std::vector<char> buffer_;
  size_t begin_ = 0;    // first byte not yet returned
  size_t end_ = 0;      // one past the last byte read
  size_t scanned_ = 0;  // bytes in [begin_, scanned_) are known to hold no '\n'
  bool eof_ = false;
  size_t split_lines_ = 0;
  size_t bytes_read_ = 0;
};

}  // namespace dormant
