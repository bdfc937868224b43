// Heartbeats held open until their host has a new command (a long-poll), so that a command
// reaches an agent within a round trip of being requested instead of a heartbeat interval later.
//
// A heartbeat is watched before the store is read for it, so a command committed at any moment
// after that read wakes it: wake() comes from the store once the command is committed (in
// process on SQLite, through LISTEN/NOTIFY from any replica on PostgreSQL).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

namespace dormant::server::api {

class LongPolls;

// One held heartbeat. Its `then` runs once, on the executor given to arm(): at the first wake
// (woken true), or when the wait runs out (false).
class LongPoll : public std::enable_shared_from_this<LongPoll> {
 public:
  LongPoll(LongPolls& hub, std::string key) : hub_(hub), key_(std::move(key)) {}
  // Starts the wait; runs `then` at once (posted) if a wake came since watch().
  using Then = std::function<void(bool woken)>;
  void arm(boost::asio::any_io_executor executor, std::chrono::milliseconds wait, Then then);
  // Not needed after all (instead of arm()): unregisters without running anything.
  void cancel();
  const std::string& key() const { return key_; }

 private:
  friend class LongPolls;
  void wake();
  void fire(bool woken);

  LongPolls& hub_;
  const std::string key_;
  std::mutex mutex_;
  bool woken_ = false;
  std::atomic<bool> fired_{false};
  Then then_;
  std::optional<boost::asio::any_io_executor> executor_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
};

class LongPolls {
 public:
  // The key of a host's heartbeats.
  static std::string key_of(const std::string& hostname, const std::string& service);

  // Registers a heartbeat of `key`; arm() or cancel() it.
  std::shared_ptr<LongPoll> watch(const std::string& key);
  // A command for the host was committed.
  void wake(const std::string& hostname, const std::string& service);
  // Notifications may have been lost (the database connection broke), or the server stops:
  // every held heartbeat answers now.
  void wake_all();
  size_t held() const;

 private:
  friend class LongPoll;
  void forget(const LongPoll* poll);

  mutable std::mutex mutex_;
  std::unordered_multimap<std::string, std::weak_ptr<LongPoll>> polls_;
};

}  // namespace dormant::server::api
