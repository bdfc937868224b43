#include "common/line_reader.h"

#include <algorithm>
#include <cstring>

#include <poll.h>
#include <unistd.h>

namespace dormant {
namespace {
constexpr size_t kReadChunk = 64 * 1024;
// Most files hold short lines: the buffer starts small and grows only for a line that does not
// fit, so reading a small file costs no megabyte to zero.
constexpr size_t kFirstBuffer = 16 * 1024;
}  // namespace

LineReader::LineReader(int fd, size_t max_line)
    : fd_(fd), max_line_(max_line), buffer_(std::min(kFirstBuffer, max_line + kReadChunk)) {}

std::optional<std::string_view> LineReader::take_piece_or_last_line(const char* newline) {
  const char* data = buffer_.data();
  if (newline != nullptr ||
      end_ - begin_ >= max_line_) {  // no '\n' within max_line bytes: cut a piece
    ++split_lines_;
    std::string_view piece(data + begin_, max_line_);
    begin_ += max_line_;
    scanned_ = begin_;
    return piece;
  }
  scanned_ = end_;
  if (eof_ && end_ > begin_) {
    std::string_view line(data + begin_, end_ - begin_);
    begin_ = scanned_ = end_;
    return line;
  }
  return std::nullopt;
}

Result<bool> LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {  // keep the partial line at the front
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    scanned_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) {  // one line fills it
    buffer_.resize(std::min(buffer_.size() * 2, max_line_ + kReadChunk));
  }
  for (;;) {
    ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return true;
      return Error::from_errno("read(fd " + std::to_string(fd_) + ")");
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(n);
    bytes_read_ += static_cast<size_t>(n);
    return true;
  }
}

Result<std::optional<std::string_view>> LineReader::wait_for_line(Deadline deadline) {
  for (;;) {
    if (eof_) return std::optional<std::string_view>();
    pollfd pfd{fd_, POLLIN, 0};
    int ready = ::poll(&pfd, 1, poll_timeout_ms(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("poll");
    }
    if (ready == 0) return Error(ErrorKind::kTimeout, "no complete line before the deadline");
    auto filled = fill();
    if (!filled) return filled.error();
    if (auto line = take_line()) return line;
  }
}

}  // namespace dormant
