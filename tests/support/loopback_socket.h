// A TCP socket bound to a free loopback port, for tests of what clients do when a server is not
// there: listening, the kernel accepts connections that are never answered; not listening, they
// are refused.
#pragma once

#include <cstdint>

#include "common/unique_fd.h"

namespace dormant::testing {

class LoopbackSocket {
 public:
  enum class Mode { kListening, kRefusing };
  explicit LoopbackSocket(Mode mode);

  uint16_t port() const { return port_; }

 private:
  UniqueFd fd_;
  uint16_t port_ = 0;
};

}  // namespace dormant::testing
