#include "heartbeat/retrying_sender.h"

#include <boost/asio/post.hpp>

#include "heartbeat/reply_text.h"
#include "heartbeat/reply_verdict.h"

namespace dormant::heartbeat {
std::shared_ptr<RetryingSender> RetryingSender::make(boost::asio::io_context& io,
                                                     std::shared_ptr<HttpsClient> client,
                                                     RetryTimer retry, std::string what,
                                                     NextMessage next,
                                                     std::unique_ptr<BackoffTimer> timer) {
  if (!timer) timer = make_steady_backoff_timer(io);
  return std::shared_ptr<RetryingSender>(new RetryingSender(
      io, std::move(client), std::move(retry), std::move(what), std::move(next), std::move(timer)));
}

RetryingSender::RetryingSender(boost::asio::io_context& io, std::shared_ptr<HttpsClient> client,
                               RetryTimer retry, std::string what, NextMessage next,
                               std::unique_ptr<BackoffTimer> timer)
    : io_(io),
      timer_(std::move(timer)),
      client_(std::move(client)),
      retry_(std::move(retry)),
      what_(std::move(what)),
      next_(std::move(next)),
      outages_(what_) {}

void RetryingSender::kick() {
  boost::asio::post(io_, [self = shared_from_this()] {
    if (!self->stopped_ && !self->busy()) self->send_next();
  });
}

void RetryingSender::flush() {
  boost::asio::post(io_, [self = shared_from_this()] {
    if (self->stopped_ || self->sending_) return;
    self->end_backoff();
    self->send_next();
  });
}

void RetryingSender::end_backoff() {
  backing_off_ = false;
  timer_->cancel();
}

void RetryingSender::stop() {
  stopped_ = true;
  timer_->cancel();
  if (sending_) client_->cancel();
}

void RetryingSender::send_next() {
  std::optional<Message> message = next_();
  if (!message) return;
  sending_ = true;
  HttpsClient::Post post = message->post;
  client_->post(std::move(post), [self = shared_from_this(),
                                  message = std::move(*message)](Result<HttpReply> reply) mutable {
    self->sending_ = false;
    if (!self->stopped_) self->on_reply(std::move(message), std::move(reply));
  });
}

void RetryingSender::on_reply(Message message, Result<HttpReply> reply) {
  ReplyVerdict verdict = reply ? verdict_of(reply->status) : ReplyVerdict::kRetry;
  if (verdict == ReplyVerdict::kRetry) {
    std::string error = reply ? describe_reply(*reply) : reply.error().message();
    auto delay = retry_.after_failure();
    outages_.failed(retry_.consecutive_failures(), error, delay);
    last_error_ = std::move(error);
    backing_off_ = true;
    timer_->wait(delay, [self = shared_from_this()] {
      if (self->stopped_) return;
      self->backing_off_ = false;
      self->send_next();
    });
    return;
  }
  outages_.recovered(retry_.consecutive_failures());
  (void)retry_.after_success();
  last_error_.clear();
  if (verdict == ReplyVerdict::kDelivered) {
    message.delivered(*reply);
  } else {
    message.refused(describe_reply(*reply));
  }
  send_next();
}

}  // namespace dormant::heartbeat
