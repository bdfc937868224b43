#include "heartbeat/backoff_timer.h"

#include <cstdint>

#include <boost/asio/steady_timer.hpp>

namespace dormant::heartbeat {
namespace {

class SteadyBackoffTimer final : public BackoffTimer {
 public:
  explicit SteadyBackoffTimer(boost::asio::io_context& io) : timer_(io) {}

  void wait(std::chrono::milliseconds delay, std::function<void()> due) override {
    uint64_t round = ++round_;
    timer_.expires_after(delay);
    // `due` keeps its owner, and so this timer, alive until it has run or been dropped.
    timer_.async_wait([this, round, due = std::move(due)](boost::system::error_code error) {
      if (error || round != round_) return;
      due();
    });
  }

  void cancel() override {
    ++round_;  // a handler already queued as due sees a newer round
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  uint64_t round_ = 0;
};

}  // namespace

std::unique_ptr<BackoffTimer> make_steady_backoff_timer(boost::asio::io_context& io) {
  return std::make_unique<SteadyBackoffTimer>(io);
}

}  // namespace dormant::heartbeat
