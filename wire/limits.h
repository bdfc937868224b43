// Bounds on what a message may ask for, beyond Performance Studio's own rules: they turn absurd
// or hostile values into errors that name the field.
#pragma once

#include <cstddef>

#include "common/profiling_limits.h"  // kMaxFrequency

namespace dormant::wire {

inline constexpr int kMaxRequestDuration = 7 * 24 * 3600;  // seconds, profiling request
inline constexpr int kMaxCommandDuration = 24 * 3600;      // seconds per snapshot, command
inline constexpr int kMaxPid = 4 * 1024 * 1024;            // the kernel's PID_MAX_LIMIT
// Longest list (or map) accepted anywhere: more than a fleet needs, few enough to bound memory.
inline constexpr std::size_t kMaxListItems = 10'000;
// Selectors in one request's target_entities: each is resolved against every active host's
// inventory, and a subscription's again on each heartbeat of its service.
inline constexpr std::size_t kMaxSelectors = 100;
// Deepest nesting kept from a message. Copying or dumping JSON recurses once per level, so a
// body of a million '[' must be refused before anything copies it.
inline constexpr int kMaxNesting = 64;
// Largest free-form object kept, serialized: a request's additional_args, a heartbeat's
// agent_health and its fields this protocol does not name. Every host list and every command
// repeats them, so their size is multiplied.
inline constexpr std::size_t kMaxObjectBytes = 64 << 10;

}  // namespace dormant::wire
