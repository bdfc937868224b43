// A control server that answers with whatever a test scripts, generated as it is sent: a reply of
// 16 MiB costs the test's process 64 KiB, so that what a reply costs the agent can be measured in
// the same process. Plain HTTP/1.1 on loopback, one request after another on each connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace dormant::heartbeat {

struct ScriptedReply {
  unsigned status = 200;
  std::string head;  // the body is head, then `unit` repeated, then tail,
  std::string unit;  // cut or padded with units to `bytes` in all
  std::string tail;
  size_t bytes = 0;
};

class StreamingReplyServer {
 public:
  // Once the script is spent, every request gets `when_spent`.
  explicit StreamingReplyServer(ScriptedReply when_spent);
  ~StreamingReplyServer();

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void push(ScriptedReply reply);
  int requests() const { return requests_; }

 private:
  void serve();
  void serve_connection(int fd);
  ScriptedReply next();

  UniqueFd listener_;
  uint16_t port_ = 0;
  std::mutex mutex_;
  std::deque<ScriptedReply> script_;
  ScriptedReply when_spent_;
  std::atomic<int> requests_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// A JSON body of `bytes` bytes: "[" + "{}," repeated + "{}]", one value per three bytes.
ScriptedReply many_objects(size_t bytes);
// `bytes` bytes of "[": arrays nested that deep (never closed: the nesting is the attack).
ScriptedReply deep_arrays(size_t bytes);

}  // namespace dormant::heartbeat
