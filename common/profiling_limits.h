// Bounds on what a profiling session may ask for, the same whether the agent's flags or a
// command from the server ask.
#pragma once

namespace dormant {

inline constexpr int kMaxFrequency = 1000;  // Hz

}  // namespace dormant
