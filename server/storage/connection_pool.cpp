#include "server/storage/connection_pool.h"

#include <algorithm>
#include <string>

namespace dormant::server::storage {

ConnectionPool::ConnectionPool(Connect connect, size_t size, std::unique_ptr<Database> first,
                               std::chrono::milliseconds max_wait)
    : connect_(std::move(connect)),
      size_(std::max<size_t>(size, 1)),
      max_wait_(max_wait),
      dialect_(first->dialect()),
      location_(first->location()) {
  idle_.push_back(std::move(first));
  open_ = 1;
}

ConnectionPool::Lease::~Lease() {
  if (pool_ != nullptr && db_) pool_->give_back(std::move(db_));
}

Result<ConnectionPool::Lease> ConnectionPool::lease() {
  {
    std::unique_lock lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    bool turn = idle_changed_.wait_for(
        lock, max_wait_, [&] { return ticket == serving_ && (!idle_.empty() || open_ < size_); });
    if (!turn) {
      if (ticket == serving_) {
        next_ticket();
      } else {
        given_up_.insert(ticket);
      }
      idle_changed_.notify_all();
      return Error(ErrorKind::kUnavailable, "every connection to " + location_ +
                                                " stayed busy for " +
                                                std::to_string(max_wait_.count()) + " ms");
    }
    next_ticket();
    idle_changed_.notify_all();  // the next ticket may go too
    if (!idle_.empty()) {
      std::unique_ptr<Database> db = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(db));
    }
    ++open_;
  }
  // Connecting takes a round trip or a timeout: not under the lock.
  auto opened = connect_();
  if (!opened) {
    std::lock_guard lock(mutex_);
    --open_;
    idle_changed_.notify_all();
    return std::move(opened).take_error();
  }
  return Lease(this, std::move(*opened));
}

void ConnectionPool::next_ticket() {
  ++serving_;
  while (given_up_.erase(serving_) > 0) ++serving_;
}

void ConnectionPool::give_back(std::unique_ptr<Database> db) {
  // A connection left inside a transaction (an error between BEGIN and the guard's ROLLBACK that
  // could not run) is as unusable as a broken one.
  bool keep = !db->broken() && !db->in_transaction();
  if (!keep) db.reset();
  std::lock_guard lock(mutex_);
  if (keep) {
    idle_.push_back(std::move(db));
  } else {
    --open_;
  }
  idle_changed_.notify_all();  // only the next ticket may take it
}

}  // namespace dormant::server::storage
