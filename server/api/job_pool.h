// Threads of their own for work that may take long, so that it never holds a thread that reads
// and writes connections: flamegraphs and pprof files (a second or more for a large profile), and
// everything that uses the database (which may be slow, or locked). Bounded: a job past the
// threads and the queue is refused at once, and the caller answers 503.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include <boost/asio/thread_pool.hpp>

namespace dormant::server::api {

class JobPool {
 public:
  // `threads` jobs run at once and `queued` more wait for one of them; `name` is for the log.
  // `nice`: the threads' nice value (0: the server's own); above it, the kernel gives them the
  // cores only once the server's other threads have had theirs.
  JobPool(std::string name, int threads, int queued, int nice = 0);
  // Waits for the jobs running; those waiting are dropped.
  ~JobPool();
  JobPool(const JobPool&) = delete;
  JobPool& operator=(const JobPool&) = delete;

  // False, and `job` dropped, when as many jobs as the pool takes are running or waiting.
  bool try_post(std::function<void()> job);
  // Queued whatever the count, for jobs whose number has a bound of its own (held heartbeats
  // answered).
  void post(std::function<void()> job);

 private:
  void run(const std::function<void()>& job);

  const std::string name_;
  const int nice_;
  std::atomic<int> free_;
  boost::asio::thread_pool threads_;
};

}  // namespace dormant::server::api
