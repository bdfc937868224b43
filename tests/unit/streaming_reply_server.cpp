#include "streaming_reply_server.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dormant::heartbeat {
namespace {

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t sent = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data.remove_prefix(static_cast<size_t>(sent));
  }
  return true;
}

// Reads one request (headers and Content-Length bytes of body); false at the end of the stream.
bool read_request(int fd, std::string& buffer) {
  size_t end;
  char chunk[16384];
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(got));
  }
  size_t length = 0;
  std::string headers = buffer.substr(0, end);
  std::transform(headers.begin(), headers.end(), headers.begin(), ::tolower);
  if (size_t at = headers.find("content-length:"); at != std::string::npos) {
    length = std::stoul(headers.substr(at + 15));
  }
  while (buffer.size() < end + 4 + length) {
    ssize_t got = ::recv(fd, chunk, sizeof(chunk), 0);
    if (got <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(got));
  }
  buffer.erase(0, end + 4 + length);
  return true;
}

bool send_reply(int fd, const ScriptedReply& reply) {
  size_t bytes = std::max(reply.bytes, reply.head.size() + reply.tail.size());
  std::string head =
      "HTTP/1.1 " + std::to_string(reply.status) +
      " Scripted\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(bytes) +
      "\r\n\r\n" + reply.head;
  if (!send_all(fd, head)) return false;
  size_t middle = bytes - reply.head.size() - reply.tail.size();
  std::string block;
  if (!reply.unit.empty()) {
    while (block.size() < (64 << 10)) block += reply.unit;
  }
  while (middle > 0) {
    size_t take = std::min(middle, block.size());
    if (!send_all(fd, std::string_view(block).substr(0, take))) return false;
    middle -= take;
  }
  return send_all(fd, reply.tail);
}

}  // namespace

ScriptedReply many_objects(size_t bytes) { return {200, "[", "{},", "{}]", bytes}; }

ScriptedReply deep_arrays(size_t bytes) { return {200, "", "[", "", bytes}; }

StreamingReplyServer::StreamingReplyServer(ScriptedReply when_spent)
    : when_spent_(std::move(when_spent)) {
  listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), size);
  ::listen(listener_.get(), 16);
  ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address), &size);
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

StreamingReplyServer::~StreamingReplyServer() {
  stopping_ = true;
  thread_.join();
}

void StreamingReplyServer::push(ScriptedReply reply) {
  std::lock_guard lock(mutex_);
  script_.push_back(std::move(reply));
}

ScriptedReply StreamingReplyServer::next() {
  std::lock_guard lock(mutex_);
  if (script_.empty()) return when_spent_;
  ScriptedReply reply = std::move(script_.front());
  script_.pop_front();
  return reply;
}

// One connection at a time: the agent's client keeps one.
void StreamingReplyServer::serve() {
  while (!stopping_) {
    pollfd ready{listener_.get(), POLLIN, 0};
    if (::poll(&ready, 1, 20) <= 0) continue;
    UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (connection.get() >= 0) serve_connection(connection.get());
  }
}

void StreamingReplyServer::serve_connection(int fd) {
  std::string buffer;
  while (!stopping_) {
    pollfd ready{fd, POLLIN, 0};
    if (::poll(&ready, 1, 20) <= 0) continue;
    if (!read_request(fd, buffer)) return;
    ++requests_;
    if (!send_reply(fd, next())) return;
  }
}

}  // namespace dormant::heartbeat
