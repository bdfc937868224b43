// The agent's side of the heartbeat: one now, then one every interval, on the agent's I/O
// thread. Each answer goes to `on_answer`, commands included (the server re-sends the current
// command every time; the caller de-duplicates). While the server fails (no connection, TLS,
// timeout, a status other than 200, an answer that is not the protocol's) the loop backs off, and
// logs once when it starts failing and once when the server answers again, not every attempt.
// The agent never exits because the server is away.
//
// Where the server advertises long-polls (kLongPollHeader), each heartbeat asks it to hold the
// answer up to the interval until a command comes, and the next one goes out as soon as the
// answer is in: still about one heartbeat per interval, but a command arrives at once. Against a
// server that does not (Performance Studio), heartbeats go out every interval as they always did.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "heartbeat/https_client.h"
#include "heartbeat/outage_log.h"
#include "heartbeat/retry_policy.h"
#include "wire/protocol.h"

namespace dormant::heartbeat {

class HeartbeatLoop : public std::enable_shared_from_this<HeartbeatLoop> {
 public:
  // Builds the next heartbeat's body: the caller knows the command ids and the agent's health.
  using BuildRequest = std::function<wire::HeartbeatRequest()>;
  using OnAnswer = std::function<void(const wire::HeartbeatResponse&)>;

  static std::shared_ptr<HeartbeatLoop> make(boost::asio::io_context& io,
                                             std::shared_ptr<HttpsClient> client, RetryTimer retry,
                                             BuildRequest build, OnAnswer on_answer);

  // The first heartbeat goes out at once. Does nothing while running.
  void start();
  // Cancels the timer and the heartbeat in flight; no callback runs after it.
  void stop();

  int consecutive_failures() const { return retry_.consecutive_failures(); }
  // What went wrong with the last heartbeat, "" when it worked: for the agent's health report.
  const std::string& last_error() const { return last_error_; }

 private:
  HeartbeatLoop(boost::asio::io_context& io, std::shared_ptr<HttpsClient> client, RetryTimer retry,
                BuildRequest build, OnAnswer on_answer);

  void send();
  void on_reply(Result<HttpReply> reply);
  Result<wire::HeartbeatResponse> read_answer(Result<HttpReply> reply) const;
  void schedule(std::chrono::milliseconds delay);
  // The hold the server offers (its kLongPollHeader), up to `interval`, in whole seconds; 0 when
  // it offers none, or the interval is under a second.
  static std::chrono::milliseconds offered_hold(const std::optional<std::string>& offer,
                                                std::chrono::milliseconds interval);

  boost::asio::steady_timer timer_;
  std::shared_ptr<HttpsClient> client_;
  RetryTimer retry_;
  BuildRequest build_;
  OnAnswer on_answer_;
  bool running_ = false;
  uint64_t run_ = 0;  // counts start() and stop(): callbacks of an earlier run are stale
  std::string last_error_;
  std::chrono::milliseconds hold_{0};  // what the next heartbeat asks the server for
  std::chrono::steady_clock::time_point sent_at_;
  OutageLog outages_{"heartbeat"};
};

}  // namespace dormant::heartbeat
