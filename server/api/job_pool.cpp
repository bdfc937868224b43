#include "server/api/job_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/post.hpp>

namespace dormant::server::api {

JobPool::JobPool(std::string name, int threads, int queued, int nice)
    : name_(std::move(name)),
      nice_(nice),
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
  // Linux keeps a nice value per thread: set on the pool's own, once each.
  thread_local bool niced = false;
  if (nice_ != 0 && !niced) {
    niced = true;
    if (::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice_) != 0) {
      spdlog::debug("the {} pool's threads keep the server's priority: {}", name_,
                    std::strerror(errno));
    }
  }
  try {
    job();
  } catch (const std::exception& error) {
    spdlog::error("a job of the {} pool failed: {}", name_, error.what());
  }
}

}  // namespace dormant::server::api
