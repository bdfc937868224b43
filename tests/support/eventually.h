// Waiting in tests for something another process or thread does.
#pragma once

#include <chrono>
#include <functional>

namespace dormant::testing {

// Asks `condition` every `poll` until it holds or `limit` has passed; its last answer.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit,
                std::chrono::milliseconds poll = std::chrono::milliseconds(50));

}  // namespace dormant::testing
