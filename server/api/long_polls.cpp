#include "server/api/long_polls.h"

#include <iterator>
#include <vector>

#include <boost/asio/post.hpp>

namespace dormant::server::api {

void LongPoll::arm(boost::asio::any_io_executor executor, std::chrono::milliseconds wait,
                   Then then) {
  bool woken = false;
  {
    std::lock_guard lock(mutex_);
    then_ = std::move(then);
    executor_ = executor;
    woken = woken_;
    if (!woken) {
      timer_ = std::make_unique<boost::asio::steady_timer>(executor, wait);
      timer_->async_wait([self = shared_from_this()](const boost::system::error_code& error) {
        if (!error) self->fire(false);
      });
    }
  }
  if (woken) fire(true);
}

LongPoll::~LongPoll() {
  if (!fired_) hub_.forget_expired(key_, address_);
}

void LongPoll::cancel() {
  fired_ = true;
  hub_.forget(this);
}

void LongPoll::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
    if (!executor_) return;  // not armed yet: arm() fires
  }
  fire(true);
}

void LongPoll::fire(bool woken) {
  if (fired_.exchange(true)) return;
  hub_.forget(this);
  // On the executor: the timer is only ever touched there, where its own handler runs.
  boost::asio::post(*executor_, [self = shared_from_this(), woken] {
    Then then;
    {
      std::lock_guard lock(self->mutex_);
      if (self->timer_) self->timer_->cancel();
      then = std::move(self->then_);
    }
    then(woken);
  });
}

std::string LongPolls::key_of(const std::string& hostname, const std::string& service) {
  return hostname + '\n' + service;
}

std::shared_ptr<LongPoll> LongPolls::watch(const std::string& key, const std::string& address) {
  std::lock_guard lock(mutex_);
  if (polls_.size() >= limits_.max_held) return nullptr;
  size_t& from_address = held_by_address_[address];
  if (from_address >= limits_.max_held_per_address) return nullptr;
  ++from_address;
  auto poll = std::make_shared<LongPoll>(*this, key, address);
  polls_.emplace(key, poll);
  return poll;
}

void LongPolls::wake(const std::string& hostname, const std::string& service) {
  std::vector<std::shared_ptr<LongPoll>> woken;
  {
    std::lock_guard lock(mutex_);
    auto [begin, end] = polls_.equal_range(key_of(hostname, service));
    for (auto it = begin; it != end; ++it) {
      if (auto poll = it->second.lock()) woken.push_back(std::move(poll));
    }
  }
  for (auto& poll : woken) poll->wake();
}

void LongPolls::wake_all() {
  std::vector<std::shared_ptr<LongPoll>> woken;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, weak] : polls_) {
      if (auto poll = weak.lock()) woken.push_back(std::move(poll));
    }
  }
  for (auto& poll : woken) poll->wake();
}

size_t LongPolls::held() const {
  std::lock_guard lock(mutex_);
  return polls_.size();
}

void LongPolls::forget(const LongPoll* poll) {
  std::lock_guard lock(mutex_);
  auto [it, end] = polls_.equal_range(poll->key());
  while (it != end) {
    if (it->second.lock().get() != poll) {
      ++it;
      continue;
    }
    it = polls_.erase(it);
    release_address(poll->address_);
  }
}

void LongPolls::forget_expired(const std::string& key, const std::string& address) {
  std::lock_guard lock(mutex_);
  auto [it, end] = polls_.equal_range(key);
  for (; it != end; ++it) {
    if (it->second.expired()) {
      polls_.erase(it);
      release_address(address);
      return;
    }
  }
}

void LongPolls::release_address(const std::string& address) {
  auto count = held_by_address_.find(address);
  if (count != held_by_address_.end() && --count->second == 0) held_by_address_.erase(count);
}

}  // namespace dormant::server::api
