#include "heartbeat/retrying_sender.h"

#include <boost/asio/post.hpp>

#include "heartbeat/protocol/json_fields.h"

namespace dormant::heartbeat {
namespace {

constexpr size_t kBodyExcerpt = 200;

// 401 and 403 too: a token being rotated is fixed on the agent (SIGHUP) or the server without
// losing what waits; the backoff keeps the tries rare meanwhile.
bool worth_retrying(unsigned status) {
  return status >= 500 || status == 408 || status == 429 || status == 401 || status == 403;
}

std::string describe(const HttpReply& reply) {
  return "the server answered HTTP " + std::to_string(reply.status) + ": " +
         single_quoted(reply.body.substr(0, kBodyExcerpt));
}

}  // namespace

std::shared_ptr<RetryingSender> RetryingSender::make(boost::asio::io_context& io,
                                                     std::shared_ptr<HttpsClient> client,
                                                     RetryTimer retry, std::string what,
                                                     NextMessage next) {
  return std::shared_ptr<RetryingSender>(new RetryingSender(io, std::move(client), std::move(retry),
                                                            std::move(what), std::move(next)));
}

RetryingSender::RetryingSender(boost::asio::io_context& io, std::shared_ptr<HttpsClient> client,
                               RetryTimer retry, std::string what, NextMessage next)
    : io_(io),
      timer_(io),
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
  ++backoffs_;  // the cancelled wait must not touch the next one
  timer_.cancel();
}

void RetryingSender::stop() {
  stopped_ = true;
  timer_.cancel();
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
  if (!reply || worth_retrying(reply->status)) {
    std::string error = reply ? describe(*reply) : reply.error().message();
    auto delay = retry_.after_failure();
    outages_.failed(retry_.consecutive_failures(), error, delay);
    last_error_ = std::move(error);
    backing_off_ = true;
    timer_.expires_after(delay);
    timer_.async_wait([self = shared_from_this(), backoff = backoffs_](boost::system::error_code) {
      if (backoff != self->backoffs_ || self->stopped_) return;
      self->backing_off_ = false;
      self->send_next();
    });
    return;
  }
  outages_.recovered(retry_.consecutive_failures());
  (void)retry_.after_success();
  last_error_.clear();
  if (reply->status >= 200 && reply->status < 300) {
    message.delivered(*reply);
  } else {
    message.refused(describe(*reply));
  }
  send_next();
}

}  // namespace dormant::heartbeat
