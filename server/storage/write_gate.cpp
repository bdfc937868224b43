#include "server/storage/write_gate.h"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

namespace dormant::server::storage {
namespace {

bool is_storage_errno(int sys_errno) {
  return sys_errno == ENOSPC || sys_errno == EDQUOT || sys_errno == EROFS;
}

std::string refusal_message(int sys_errno, const std::filesystem::path& dir) {
  return "the server cannot store data: " + std::string(std::strerror(sys_errno)) + " (" +
         dir.string() + ")";
}

std::string in_kib(uint64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }

}  // namespace

std::optional<uint64_t> free_bytes_at(const std::filesystem::path& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

Result<void> WriteGate::check(uint64_t bytes) {
  struct statvfs fs {};
  if (::statvfs(dir_.c_str(), &fs) != 0) return ok();
  if ((fs.f_flag & ST_RDONLY) != 0) return refuse(EROFS, "the file system is mounted read-only");
  uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (free_bytes < kMinFreeBytes + bytes) {
    std::string needed = bytes > 0 ? " this write needs (" + in_kib(bytes) + ") and" : "";
    return refuse(ENOSPC, in_kib(free_bytes) + " free, less than" + needed + " the " +
                              in_kib(kMinFreeBytes) + " the server keeps in reserve");
  }
  return ok();
}

Error WriteGate::failed(Error error) {
  // check()'s refusal, handed back through the operation, is counted already.
  if (is_storage_refusal(error) || !is_storage_errno(error.sys_errno())) return error;
  return refuse(error.sys_errno(), error.message());
}

void WriteGate::succeeded() {
  std::lock_guard lock(mutex_);
  if (refusing_ == 0) return;
  spdlog::info("storage: {} takes writes again; {} write(s) were refused with 503 meanwhile",
               dir_.string(), refused_);
  refusing_ = 0;
  refused_ = 0;
}

Error WriteGate::refuse(int sys_errno, const std::string& detail) {
  std::string message = refusal_message(sys_errno, dir_);
  std::lock_guard lock(mutex_);
  if (refusing_ != sys_errno) {
    spdlog::error(
        "storage: {}: {}. Writes (heartbeats, profiling requests, command completions, profile "
        "uploads) are refused with 503 until {}; reads go on",
        message, detail,
        sys_errno == EROFS ? "the file system is writable again" : "space is freed");
    refusing_ = sys_errno;
  }
  ++refused_;
  return Error(ErrorKind::kUnavailable, std::move(message), sys_errno);
}

bool is_storage_refusal(const Error& error) {
  return error.kind() == ErrorKind::kUnavailable && is_storage_errno(error.sys_errno());
}

}  // namespace dormant::server::storage
