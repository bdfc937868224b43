#include "heartbeat/heartbeat_loop.h"

#include <algorithm>
#include <optional>

#include "common/json_text.h"
#include "common/text.h"
#include "heartbeat/reply_text.h"
#include "wire/bounded_json.h"

namespace dormant::heartbeat {
namespace {

// The least time between two long-polls: a server that answers them at once (a wake that found
// nothing new) cannot make the agent spin.
constexpr std::chrono::milliseconds kLeastLongPollGap{1000};

}  // namespace

std::shared_ptr<HeartbeatLoop> HeartbeatLoop::make(boost::asio::io_context& io,
                                                   std::shared_ptr<HttpsClient> client,
                                                   RetryTimer retry, BuildRequest build,
                                                   OnAnswer on_answer) {
  return std::shared_ptr<HeartbeatLoop>(new HeartbeatLoop(io, std::move(client), std::move(retry),
                                                          std::move(build), std::move(on_answer)));
}

HeartbeatLoop::HeartbeatLoop(boost::asio::io_context& io, std::shared_ptr<HttpsClient> client,
                             RetryTimer retry, BuildRequest build, OnAnswer on_answer)
    : timer_(io),
      client_(std::move(client)),
      retry_(std::move(retry)),
      build_(std::move(build)),
      on_answer_(std::move(on_answer)) {}

void HeartbeatLoop::start() {
  if (running_) return;
  running_ = true;
  ++run_;
  schedule(std::chrono::milliseconds(0));
}

void HeartbeatLoop::stop() {
  running_ = false;
  ++run_;  // what the previous run still has in flight is ignored when it comes back
  timer_.cancel();
  client_->cancel();
}

void HeartbeatLoop::schedule(std::chrono::milliseconds delay) {
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this(), run = run_](boost::system::error_code error) {
    if (!error && run == self->run_) self->send();
  });
}

void HeartbeatLoop::send() {
  wire::HeartbeatBody body = wire::heartbeat_body(build_());
  HttpsClient::Post post{.path = std::string(wire::kHeartbeatPath),
                         .body = std::move(body.own),
                         .held_for = hold_,
                         .shared_body = std::move(body.shared)};
  if (hold_.count() > 0) {
    post.path += "?" + std::string(wire::kLongPollWaitParameter) + "=" +
                 std::to_string(std::chrono::duration_cast<std::chrono::seconds>(hold_).count());
  }
  sent_at_ = std::chrono::steady_clock::now();
  client_->post(std::move(post), [self = shared_from_this(), run = run_](Result<HttpReply> reply) {
    if (run == self->run_) self->on_reply(std::move(reply));
  });
}

std::chrono::milliseconds HeartbeatLoop::offered_hold(const std::optional<std::string>& offer,
                                                      std::chrono::milliseconds interval) {
  auto seconds = offer ? parse_integer(*offer) : std::nullopt;
  if (!seconds || *seconds <= 0) return {};
  // The hold is asked in whole seconds: below one, plain polling is as quick.
  auto hold =
      std::min(std::chrono::seconds(*seconds), std::chrono::floor<std::chrono::seconds>(interval));
  return hold.count() >= 1 ? std::chrono::milliseconds(hold) : std::chrono::milliseconds(0);
}

Result<wire::HeartbeatResponse> HeartbeatLoop::read_answer(Result<HttpReply> reply) const {
  if (!reply) return std::move(reply).take_error();
  if (reply->status != 200) {
    return Error(ErrorKind::kNetwork, describe_reply(*reply));
  }
  auto body = wire::parse_json_within(reply->body, "heartbeat answer");
  if (!body) return std::move(body).take_error();
  return wire::parse_heartbeat_response(*body);
}

void HeartbeatLoop::on_reply(Result<HttpReply> reply) {
  hold_ = {};
  std::optional<std::string> offer;
  if (reply) {
    if (const std::string* header = reply->header(wire::kLongPollHeader)) offer = *header;
  }
  auto answer = read_answer(std::move(reply));
  if (!answer) {
    auto delay = retry_.after_failure();
    outages_.failed(retry_.consecutive_failures(), answer.error().message(), delay);
    last_error_ = answer.error().message();
    return schedule(delay);
  }
  int failures = retry_.consecutive_failures();
  auto delay = retry_.after_success();
  outages_.recovered(failures);
  last_error_.clear();
  hold_ = offered_hold(offer, retry_.interval());  // not the jittered delay
  // A hold newly offered is taken at once: the first command need not wait out an interval.
  if (hold_.count() > 0) {
    auto since_sent = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - sent_at_);
    delay = std::max(kLeastLongPollGap - since_sent, std::chrono::milliseconds(0));
  }
  on_answer_(*answer);
  if (running_) schedule(delay);
}

}  // namespace dormant::heartbeat
