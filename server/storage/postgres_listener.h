// The PostgreSQL side of "a command was committed for this host": a thread of its own, with a
// connection of its own, LISTENing on kCommandsChannel, which every replica's store NOTIFYs in
// the transaction that writes a command (delivered at its commit, to every replica).
//
// When the connection breaks, notifications are lost until it is back: on each reconnection
// `missed` runs, so that whoever waits for them looks again.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace dormant::server::storage {

inline constexpr std::string_view kCommandsChannel = "dormant_commands";

class PostgresListener {
 public:
  using OnNotification = std::function<void(const std::string& payload)>;

  PostgresListener(std::string url, OnNotification notified, std::function<void()> missed);
  PostgresListener(const PostgresListener&) = delete;
  PostgresListener& operator=(const PostgresListener&) = delete;
  ~PostgresListener();

 private:
  void run();
  // Listens until the connection breaks or stop; false on stop.
  bool listen_once();
  bool pause(std::chrono::milliseconds delay);  // false when stopping

  const std::string url_;
  OnNotification notified_;
  std::function<void()> missed_;
  UniqueFd stop_;  // an eventfd: written once to stop the thread
  std::atomic<bool> stopping_{false};
  bool listened_before_ = false;
  std::thread thread_;
};

}  // namespace dormant::server::storage
