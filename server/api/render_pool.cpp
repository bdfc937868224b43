#include "server/api/render_pool.h"

#include <algorithm>
#include <exception>

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>

namespace dormant::server::api {

RenderPool::RenderPool(int threads, int queued)
    : free_(std::max(1, threads) + std::max(0, queued)),
      threads_(static_cast<size_t>(std::max(1, threads))) {}

RenderPool::~RenderPool() {
  threads_.stop();
  threads_.join();
}

bool RenderPool::try_post(std::function<void()> job) {
  int free = free_.load();
  do {
    if (free <= 0) return false;
  } while (!free_.compare_exchange_weak(free, free - 1));
  boost::asio::post(threads_, [this, job = std::move(job)] {
    try {
      job();
    } catch (const std::exception& error) {
      spdlog::error("a render failed: {}", error.what());
    }
    free_.fetch_add(1);
  });
  return true;
}

}  // namespace dormant::server::api
