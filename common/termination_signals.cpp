#include "common/termination_signals.h"

#include <algorithm>
#include <cerrno>

#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>

namespace dormant {
namespace {

sigset_t termination_set() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

}  // namespace

void block_termination_signals() {
  sigset_t signals = termination_set();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int wait_for_termination(Deadline until) {
  sigset_t signals = termination_set();
  for (;;) {
    if (until == kNoDeadline) {
      int received = 0;
      if (sigwait(&signals, &received) == 0) return received;
      continue;
    }
    auto left = std::max(until - SteadyClock::now(), SteadyClock::duration::zero());
    auto seconds = std::chrono::duration_cast<std::chrono::seconds>(left);
    timespec timeout{static_cast<time_t>(seconds.count()),
                     static_cast<long>((left - seconds) / std::chrono::nanoseconds(1))};
    int received = ::sigtimedwait(&signals, nullptr, &timeout);
    if (received == SIGINT || received == SIGTERM) return received;
    if (left == SteadyClock::duration::zero()) return 0;  // EAGAIN; EINTR tries again
  }
}

void block_reload_signal() {
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hangup, nullptr);
}

Result<UniqueFd> termination_signal_fd(bool with_reload) {
  sigset_t signals = termination_set();
  if (with_reload) sigaddset(&signals, SIGHUP);
  UniqueFd fd(::signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd) return Error::from_errno("signalfd");
  return fd;
}

}  // namespace dormant
