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
  LongPoll(LongPolls& hub, std::string key, std::string address)
      : hub_(hub), key_(std::move(key)), address_(std::move(address)) {}
  // One neither armed nor cancelled (its request failed) gives its place back.
  ~LongPoll();
  // Starts the wait; runs `then` at once (posted) if a wake came since watch().
  using Then = std::function<void(bool woken)>;
  void arm(boost::asio::any_io_executor executor, std::chrono::milliseconds wait, Then then);
  // Not needed after all (instead of arm()): unregisters without running anything.
  void cancel();
  // Runs `then` now, as if the wait had run out (the server needs the connection back).
  void end_now() { fire(false); }
  const std::string& key() const { return key_; }

 private:
  friend class LongPolls;
  void wake();
  void fire(bool woken);

  LongPolls& hub_;
  const std::string key_;
  const std::string address_;
  std::mutex mutex_;
  bool woken_ = false;
  std::atomic<bool> fired_{false};
  Then then_;
  std::optional<boost::asio::any_io_executor> executor_;
  std::unique_ptr<boost::asio::steady_timer> timer_;
};

// Held heartbeats hold connections: at most `max_held` at once, and `max_held_per_address` from
// one client address, so that long-polls leave room for everything else.
struct LongPollLimits {
  size_t max_held = 8192;
  size_t max_held_per_address = 8;
};

class LongPolls {
 public:
  explicit LongPolls(LongPollLimits limits = {}) : limits_(limits) {}
  // The key of a host's heartbeats.
  static std::string key_of(const std::string& hostname, const std::string& service);

  // Registers a heartbeat of `key` from `address`; arm() or cancel() it. Null when the limits
  // are reached: that heartbeat is answered at once.
  std::shared_ptr<LongPoll> watch(const std::string& key, const std::string& address);
  // A command for the host was committed.
  void wake(const std::string& hostname, const std::string& service);
  // Notifications may have been lost (the database connection broke), or the server stops:
  // every held heartbeat answers now.
  void wake_all();
  size_t held() const;

 private:
  friend class LongPoll;
  void forget(const LongPoll* poll);
  // A poll of `key` from `address` that ended without forget(): its entry has expired.
  void forget_expired(const std::string& key, const std::string& address);
  void release_address(const std::string& address);  // under mutex_

  const LongPollLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_multimap<std::string, std::weak_ptr<LongPoll>> polls_;
  std::unordered_map<std::string, size_t> held_by_address_;
};

}  // namespace dormant::server::api
