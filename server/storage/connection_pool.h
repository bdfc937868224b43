// The store's connections to its database, each leased to one operation at a time. SQLite has
// one (its writers take turns anyway); PostgreSQL as many as the server has threads, so that
// requests on different threads run side by side.
//
// A lease waits `max_wait` at most: past it, it fails (kUnavailable), and the request that asked
// is answered 503 instead of holding a server thread for as long as the database is slow.
//
// A connection found broken when its lease ends (the database restarted, the network dropped it)
// is closed; the next lease opens a new one. While the database cannot be reached, leases fail
// with connect()'s error (kUnavailable) and the pool tries again at each lease.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "common/result.h"
#include "server/storage/database.h"

namespace dormant::server::storage {

class ConnectionPool {
 public:
  using Connect = std::function<Result<std::unique_ptr<Database>>()>;

  // `first` is a connection already open (the one the schema was migrated on).
  ConnectionPool(Connect connect, size_t size, std::unique_ptr<Database> first,
                 std::chrono::milliseconds max_wait = std::chrono::seconds(2));

  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  class Lease {
   public:
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), db_(std::move(other.db_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Database& operator*() const { return *db_; }
    Database* operator->() const { return db_.get(); }

   private:
    friend class ConnectionPool;
    Lease(ConnectionPool* pool, std::unique_ptr<Database> db) : pool_(pool), db_(std::move(db)) {}
    ConnectionPool* pool_;
    std::unique_ptr<Database> db_;
  };

  // Waits for an idle connection, or opens one while fewer than `size` exist. Leases are granted
  // in the order they were asked for: an operation that leases again and again (a request's
  // batches) lets those that asked meanwhile (heartbeats) go first.
  Result<Lease> lease();

  Dialect dialect() const { return dialect_; }
  const std::string& location() const { return location_; }

 private:
  void give_back(std::unique_ptr<Database> db);
  void next_ticket();  // under the lock: serving_ moves past the tickets given up

  Connect connect_;
  const size_t size_;
  const std::chrono::milliseconds max_wait_;
  const Dialect dialect_;
  const std::string location_;
  std::mutex mutex_;
  std::condition_variable idle_changed_;
  std::vector<std::unique_ptr<Database>> idle_;
  size_t open_ = 0;  // idle or leased, or being opened
  // Tickets: the lease to grant next, and the next to hand out.
  uint64_t serving_ = 0;
  uint64_t next_ticket_ = 0;
  std::set<uint64_t> given_up_;  // tickets whose wait ran out before their turn
};

}  // namespace dormant::server::storage
