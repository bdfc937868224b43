// Work that must not hold its caller past a deadline, though it may block in the kernel (a read of
// another process's /proc files, a BPF load): it runs on a thread of its own. Past the deadline
// the caller goes on with an error, and the thread, left to finish, drops what it built.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/deadline.h"
#include "common/result.h"

namespace dormant {

// `work`'s result when it is done within `timeout`, and in time by its own measure too (so that
// work done just past the deadline is refused alike); else a kTimeout error naming `what`.
template <typename T>
Result<T> within_deadline(std::chrono::milliseconds timeout, const std::string& what,
                          std::function<Result<T>()> work) {
  struct Shared {
    std::mutex mutex;
    std::condition_variable done;
    std::optional<Result<T>> result;
  };
  auto shared = std::make_shared<Shared>();
  Deadline deadline = deadline_after(timeout);
  auto passed = [what, timeout] {
    return Error(ErrorKind::kTimeout, what + " took longer than its " +
                                          std::to_string(timeout.count()) + " ms: given up");
  };
  try {
    std::thread([shared, work = std::move(work), deadline, passed]() mutable {
      std::optional<Result<T>> result;
      try {
        result.emplace(work());
      } catch (const std::exception& thrown) {
        result.emplace(Error(ErrorKind::kSystem, thrown.what()));
      }
      if (SteadyClock::now() > deadline) result.emplace(passed());
      std::lock_guard lock(shared->mutex);
      shared->result = std::move(result);
      shared->done.notify_all();
    }).detach();
  } catch (const std::system_error& thrown) {
    return Error(ErrorKind::kSystem, what + ": no thread for it: " + thrown.what());
  }
  std::unique_lock lock(shared->mutex);
  if (!shared->done.wait_until(lock, deadline, [&] { return shared->result.has_value(); })) {
    return passed();
  }
  return std::move(*shared->result);
}

}  // namespace dormant
