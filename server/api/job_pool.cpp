#include "server/api/job_pool.h"

#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace dormant::server::api {

JobPool::JobPool(std::string name, int threads, int queued)
    : name_(std::move(name)),
      free_(std::max(1, threads) + std::max(0, queued)),
      threads_(static_cast<size_t>(std::max(1, threads))) {}

JobPool::~JobPool() {
  threads_.stop();
  threads_.join();
}

bool JobPool::try_post(std::function<void()> job) {
  int free = free_.load();
  do {
    if (free <= 0) return false;
  } while (!free_.compare_exchange_weak(free, free - 1));
  boost::asio::post(threads_, [this, job = std::move(job)] {
    run(job);
    free_.fetch_add(1);
  });
  return true;
}

void JobPool::post(std::function<void()> job) {
  boost::asio::post(threads_, [this, job = std::move(job)] { run(job); });
}

void JobPool::run(const std::function<void()>& job) {
  try {
    job();
  } catch (const std::exception& error) {
    spdlog::error("a job of the {} pool failed: {}", name_, error.what());
  }
}

}  // namespace dormant::server::api
