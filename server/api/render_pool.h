// Where flamegraphs and pprof files are made: threads of their own, so that a render (a second
// or more for a large profile) never holds a thread that reads and writes connections. Bounded:
// a job past the threads and the queue is refused at once, and the caller answers 503.
#pragma once

#include <atomic>
#include <functional>

#include <boost/asio/thread_pool.hpp>

namespace dormant::server::api {

class RenderPool {
 public:
  // `threads` jobs run at once and `queued` more wait for one of them.
  RenderPool(int threads, int queued);
  // Waits for the jobs running; those waiting are dropped.
  ~RenderPool();
  RenderPool(const RenderPool&) = delete;
  RenderPool& operator=(const RenderPool&) = delete;

  // False, and `job` dropped, when as many jobs as the pool takes are running or waiting.
  bool try_post(std::function<void()> job);

 private:
  std::atomic<int> free_;
  boost::asio::thread_pool threads_;
};

}  // namespace dormant::server::api
