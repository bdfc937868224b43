// Delivers a queue of messages to the server, one at a time and oldest first, for the agent's
// command completions and profile uploads. The queue lives with the caller (the journal, the
// spool); this asks it for the head. A 2xx delivers the message; 400, 413, 415 and 422 refuse it
// for good (retrying would only block the queue); anything else, a transport error included,
// keeps it and tries again with backoff (reply_verdict.h). Runs on the io_context; kick() may be
// called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>

#include "heartbeat/backoff_timer.h"
#include "heartbeat/https_client.h"
#include "heartbeat/outage_log.h"
#include "heartbeat/retry_policy.h"

namespace dormant::heartbeat {

class RetryingSender : public std::enable_shared_from_this<RetryingSender> {
 public:
  struct Message {
    HttpsClient::Post post;
    std::function<void(const HttpReply&)> delivered;      // removes it from the queue
    std::function<void(const std::string& why)> refused;  // removes it from the queue
  };
  // The head of the queue, or nothing when it is empty.
  using NextMessage = std::function<std::optional<Message>()>;

  // `what` names the messages in the log: "command completion", "profile upload". `timer`
  // waits out the backoffs; null: the io_context's steady clock.
  static std::shared_ptr<RetryingSender> make(boost::asio::io_context& io,
                                              std::shared_ptr<HttpsClient> client, RetryTimer retry,
                                              std::string what, NextMessage next,
                                              std::unique_ptr<BackoffTimer> timer = nullptr);

  // Something was queued: send it unless a send or a backoff is under way.
  void kick();
  // Sends now, cutting a backoff short (shutdown: the server may be back already).
  void flush();
  // Cancels the send in flight and the backoff; no callback runs after it.
  void stop();

  bool busy() const { return sending_ || backing_off_; }
  // Waiting to try a message again: the server could not take it.
  bool backing_off() const { return backing_off_; }
  int consecutive_failures() const { return retry_.consecutive_failures(); }
  const std::string& last_error() const { return last_error_; }

 private:
  RetryingSender(boost::asio::io_context& io, std::shared_ptr<HttpsClient> client, RetryTimer retry,
                 std::string what, NextMessage next, std::unique_ptr<BackoffTimer> timer);
  void send_next();
  void end_backoff();
  void on_reply(Message message, Result<HttpReply> reply);

  boost::asio::io_context& io_;
  std::unique_ptr<BackoffTimer> timer_;
  std::shared_ptr<HttpsClient> client_;
  RetryTimer retry_;
  std::string what_;
  NextMessage next_;
  OutageLog outages_;
  bool sending_ = false;
  bool backing_off_ = false;
  bool stopped_ = false;
  std::string last_error_;
};

}  // namespace dormant::heartbeat
