// LineReader: splits what arrives on a file descriptor into lines without ever holding more than
// one buffer of it, however much the writer sends.
#pragma once

#include <cstddef>
#include <cstring>
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
  Result<std::optional<std::string_view>> next(Deadline deadline = kNoDeadline) {
    if (auto line = take_line()) return line;  // inline: most calls end here
    return wait_for_line(deadline);
  }

  // For callers that poll several descriptors themselves: a complete line already buffered...
  std::optional<std::string_view> take_line() {
    const char* data = buffer_.data();
    auto* newline = static_cast<const char*>(std::memchr(data + scanned_, '\n', end_ - scanned_));
    if (newline == nullptr || static_cast<size_t>(newline - data) - begin_ > max_line_) {
      return take_piece_or_last_line(newline);
    }
    std::string_view line(data + begin_, static_cast<size_t>(newline - data) - begin_);
    begin_ = scanned_ = static_cast<size_t>(newline - data) + 1;
    return line;
  }
  // ...and one read(2) into the buffer: false at end of input.
  Result<bool> fill();

  int fd() const { return fd_; }
  bool at_eof() const { return eof_; }
  size_t split_lines() const { return split_lines_; }  // pieces cut at max_line
  size_t bytes_read() const { return bytes_read_; }

 private:
  // take_line() without a whole line of at most max_line bytes in the buffer. `newline` is where
  // the buffer's first '\n' is, if it holds one.
  std::optional<std::string_view> take_piece_or_last_line(const char* newline);
  // next() once the buffer holds no complete line: reads until it does.
  Result<std::optional<std::string_view>> wait_for_line(Deadline deadline);

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
