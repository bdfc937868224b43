// Reads another process's memory (process_vm_readv): what its runtimes' structures hold. Every
// read either gets all it asked for or fails: a page unmapped since, a process gone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <sys/types.h>

namespace dormant::profilers::system {

bool read_process_memory(pid_t pid, uint64_t address, void* into, size_t size);

template <typename T>
std::optional<T> read_process_value(pid_t pid, uint64_t address) {
  T value{};
  if (!read_process_memory(pid, address, &value, sizeof(value))) return std::nullopt;
  return value;
}

// A NUL-terminated string of at most `max_bytes` (its NUL not counted); nullopt where it could
// not be read or is longer.
std::optional<std::string> read_process_string(pid_t pid, uint64_t address, size_t max_bytes);

}  // namespace dormant::profilers::system
