// SIGINT and SIGTERM, taken synchronously: blocked in every thread, then waited for where the
// program can act on them (finish a snapshot, drain requests) instead of in a signal handler.
#pragma once

#include "common/deadline.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace dormant {

// Blocks SIGINT and SIGTERM and ignores SIGPIPE. Call first in main(), before any thread starts,
// so that every thread inherits the mask.
void block_termination_signals();

// The termination signal that came (SIGINT or SIGTERM), or 0 when `until` passed first. A signal
// that came earlier is pending and is taken at once, even when `until` has already passed.
int wait_for_termination(Deadline until = kNoDeadline);

// Blocks SIGHUP too, for a daemon that reloads its configuration on it; first in main() as well.
void block_reload_signal();

// A signalfd(2) that becomes readable when SIGINT or SIGTERM comes (they must be blocked), and
// SIGHUP `with_reload`, for an event loop to wait on beside its sockets. Reads give
// signalfd_siginfo records.
Result<UniqueFd> termination_signal_fd(bool with_reload = false);

}  // namespace dormant
