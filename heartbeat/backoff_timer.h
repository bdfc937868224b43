// Waits out a delivery's backoff. On the agent, the io_context's steady clock; in tests, fake
// time, so that an outage of hours is played in milliseconds.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include <boost/asio/io_context.hpp>

namespace dormant::heartbeat {

class BackoffTimer {
 public:
  virtual ~BackoffTimer() = default;
  // Runs `due` on the io_context once `delay` has passed. A later wait() or cancel() drops it.
  virtual void wait(std::chrono::milliseconds delay, std::function<void()> due) = 0;
  virtual void cancel() = 0;
};

std::unique_ptr<BackoffTimer> make_steady_backoff_timer(boost::asio::io_context& io);

}  // namespace dormant::heartbeat
