#include "profilers/system/process_memory.h"

#include <algorithm>
#include <cstring>

#include <sys/uio.h>

namespace dormant::profilers::system {
namespace {

constexpr uint64_t kPage = 4096;

}  // namespace

bool read_process_memory(pid_t pid, uint64_t address, void* into, size_t size) {
  iovec local{into, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return ::process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

std::optional<std::string> read_process_string(pid_t pid, uint64_t address, size_t max_bytes) {
  std::string text;
  char chunk[256];
  // A page at a time at most: the string may end just before a page that is not mapped.
  while (text.size() <= max_bytes) {
    size_t size = std::min<uint64_t>(sizeof(chunk), kPage - address % kPage);
    if (!read_process_memory(pid, address, chunk, size)) return std::nullopt;
    const void* end = std::memchr(chunk, 0, size);
    size_t used = end ? static_cast<size_t>(static_cast<const char*>(end) - chunk) : size;
    text.append(chunk, used);
    if (end) return text.size() <= max_bytes ? std::optional(std::move(text)) : std::nullopt;
    address += size;
  }
  return std::nullopt;
}

}  // namespace dormant::profilers::system
