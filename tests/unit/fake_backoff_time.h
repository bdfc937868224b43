// Fake time for delivery backoffs: each wait is queued at its deadline, and the test moves the
// clock to the next deadline when nothing else is under way, so an hour of backoffs passes in
// milliseconds while every request still goes over a real connection.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "heartbeat/backoff_timer.h"

namespace dormant::heartbeat {

class FakeBackoffTime {
 public:
  explicit FakeBackoffTime(boost::asio::io_context& io) : io_(io) {}
  // What still waits holds its sender, whose timer holds the state: dropped here, that ends.
  ~FakeBackoffTime() {
    auto pending = std::move(state_->due);
    state_->due.clear();
  }

  std::chrono::milliseconds now() const { return std::chrono::milliseconds(state_->now_ms.load()); }

  // Moves the clock to the earliest deadline and runs what was due then; false when none waits.
  bool advance_to_next() {
    if (state_->due.empty()) return false;
    auto next = state_->due.begin();
    state_->now_ms = std::max(state_->now_ms.load(), next->first.first);
    boost::asio::post(io_, std::move(next->second));
    state_->due.erase(next);
    return true;
  }

  std::unique_ptr<BackoffTimer> timer() { return std::make_unique<Timer>(state_); }

 private:
  using Key = std::pair<int64_t, uint64_t>;  // (deadline in ms, sequence)
  struct State {
    std::atomic<int64_t> now_ms{0};  // read by the server's thread
    uint64_t sequence = 0;
    std::map<Key, std::function<void()>> due;
  };

  class Timer final : public BackoffTimer {
   public:
    explicit Timer(std::shared_ptr<State> state) : state_(std::move(state)) {}
    ~Timer() override { cancel(); }
    void wait(std::chrono::milliseconds delay, std::function<void()> due) override {
      cancel();
      key_ = Key{state_->now_ms + delay.count(), state_->sequence++};
      state_->due.emplace(*key_, std::move(due));
    }
    void cancel() override {
      if (key_) state_->due.erase(*key_);
      key_.reset();
    }

   private:
    std::shared_ptr<State> state_;
    std::optional<Key> key_;
  };

  boost::asio::io_context& io_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace dormant::heartbeat
