// Whether the data directory takes writes now. A full or read-only file system is a state the
// server waits out, not a failure of the server: while it lasts, every write is refused with an
// Error that says why (see is_storage_refusal; the API answers it with 503 and Retry-After), what
// is stored stays as it was and reads go on; the first write that succeeds afterwards ends it.
// One log line when refusals start or change their reason, one when writes succeed again.
//
// Two checks find the state. statvfs before each write: the file system is mounted read-only, or
// has less than kMinFreeBytes left (on a full disk SQLite may still commit into WAL pages it
// already has, then fail on the next one, a checkpoint or a profile file: refusing at the
// threshold keeps the answer steady). And the errno of a write that failed anyway, when the
// space ran out during it: SQLite rolls the transaction back, a profile's temporary file is
// removed, so nothing half-written stays.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace dormant::server::storage {

class WriteGate {
 public:
  static constexpr uint64_t kMinFreeBytes = 64 << 10;

  explicit WriteGate(std::filesystem::path dir) : dir_(std::move(dir)) {}

  WriteGate(const WriteGate&) = delete;
  WriteGate& operator=(const WriteGate&) = delete;

  // Before a write of some `bytes`: the refusal when the file system is read-only or has less
  // than kMinFreeBytes free besides them. A file system that statvfs cannot ask is let through:
  // the write will tell.
  Result<void> check(uint64_t bytes = 0);
  // After a write that failed: the refusal when it failed for lack of space or of write access
  // (ENOSPC, EDQUOT, EROFS), `error` itself otherwise.
  Error failed(Error error);
  // After a write that succeeded: ends the refusals, if any.
  void succeeded();

 private:
  // Counts the refusal and logs it when it starts a run of refusals or changes their reason.
  Error refuse(int sys_errno, const std::string& detail);

  std::filesystem::path dir_;
  std::mutex mutex_;
  int refusing_ = 0;      // the errno of the refusals under way; 0: writes go through
  uint64_t refused_ = 0;  // writes refused since the refusals started
};

// The bytes free to unprivileged writers on the file system of `dir`; nullopt when statvfs fails.
std::optional<uint64_t> free_bytes_at(const std::filesystem::path& dir);

// True for WriteGate's refusals: "the server cannot store data: <strerror> (<data directory>)",
// kind kUnavailable, errno ENOSPC, EDQUOT or EROFS. Worth retrying once space or write access
// returns.
bool is_storage_refusal(const Error& error);

}  // namespace dormant::server::storage
