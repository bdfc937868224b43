#include "agent/profile_spool.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kSuffix = ".upload";
constexpr uint64_t kMaxFileBytes = 64 << 20;
constexpr size_t kMaxEndTimeBytes = 64;

Result<heartbeat::CompressedUpload> parse_spool_file(std::string content) {
  size_t newline = content.find('\n');
  if (newline == std::string::npos || newline > kMaxEndTimeBytes) {
    return Error::invalid_argument("no end time on its first line");
  }
  heartbeat::CompressedUpload upload;
  upload.end_time = content.substr(0, newline);
  content.erase(0, newline + 1);
  upload.gzip_head = std::move(content);
  return upload;
}

bool is_spool_file(const fs::directory_entry& entry) {
  std::string name = entry.path().filename().string();
  return entry.is_regular_file() && name.ends_with(kSuffix) && name.front() != '.';
}

}  // namespace

Result<std::unique_ptr<ProfileSpool>> ProfileSpool::open(fs::path directory, uint64_t max_bytes,
                                                         uint64_t max_held_bytes) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    return Error(ErrorKind::kSystem,
                 "cannot create the spool " + directory.string() + ": " + error.message());
  }
  std::unique_ptr<ProfileSpool> spool(
      new ProfileSpool(std::move(directory), max_bytes, max_held_bytes));
  std::lock_guard lock(spool->mutex_);
  spool->recount();
  if (spool->files_ > 0) {
    spdlog::info("{} profiles ({} bytes) from an earlier run wait for upload", spool->files_,
                 spool->bytes_);
  }
  return spool;
}

std::vector<fs::path> ProfileSpool::sorted_files() const {
  std::vector<fs::path> paths;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory_, error)) {
    if (is_spool_file(entry) && !delivered_.contains(entry.path().filename().string())) {
      paths.push_back(entry.path());
    }
  }
  // Names start with a zero-padded time in milliseconds and a sequence number.
  std::sort(paths.begin(), paths.end());
  return paths;
}

void ProfileSpool::recount() {
  files_ = 0;
  bytes_ = 0;
  for (const auto& path : sorted_files()) {
    std::error_code error;
    uint64_t size = fs::file_size(path, error);
    if (error) continue;
    ++files_;
    bytes_ += size;
    // Names are "<stamp>-<sequence>.upload": the newest stamp is the last file's.
    std::string name = path.filename().string();
    int64_t stamp = 0;
    std::from_chars(name.data(), name.data() + name.size(), stamp);
    last_stamp_ = std::max(last_stamp_, stamp);
  }
}

Result<void> ProfileSpool::add(const heartbeat::CompressedUpload& upload) {
  if (upload.end_time.size() > kMaxEndTimeBytes ||
      upload.end_time.find('\n') != std::string::npos) {
    return Error::invalid_argument("the profile's end time is not one short line");
  }
  std::string content = upload.end_time + "\n" + upload.gzip_head;
  if (content.size() > max_bytes_) {
    return Error::invalid_argument("a profile of " + std::to_string(content.size()) +
                                   " bytes does not fit in the spool's " +
                                   std::to_string(max_bytes_));
  }
  std::lock_guard lock(mutex_);
  auto files = sorted_files();
  for (size_t i = 0; bytes_ + content.size() > max_bytes_ && i < files.size(); ++i) {
    std::error_code error;
    fs::remove(files[i], error);
    spdlog::warn("upload spool full ({} bytes at most): dropped the oldest profile {}", max_bytes_,
                 files[i].filename().string());
    recount();
  }
  // The wall clock in milliseconds, but never a stamp at or before the last one: a clock stepped
  // back must not put a new profile before those that wait.
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  last_stamp_ = std::max(now, last_stamp_ + 1);
  char name[64];
  std::snprintf(name, sizeof(name), "%015lld-%06llu%s", static_cast<long long>(last_stamp_),
                static_cast<unsigned long long>(sequence_++ % 1'000'000), kSuffix.data());
  remove_delivered();
  write_held();
  write_or_hold(name, std::move(content));
  return {};
}

void ProfileSpool::write_or_hold(const std::string& name, std::string content) {
  auto written = write_file_atomically(directory_ / name, content, 0600);
  if (written) {
    if (!write_error_.empty()) {
      spdlog::info("the upload spool {} is written again", directory_.string());
      write_error_.clear();
    }
    ++files_;
    bytes_ += content.size();
    return;
  }
  if (write_error_.empty()) {
    spdlog::error(
        "cannot write the upload spool: {}; profiles are held in memory ({} MiB at most) until "
        "it can be written",
        written.error().message(), max_held_bytes_ >> 20);
  }
  write_error_ = written.error().message();
  held_bytes_ += content.size();
  held_.emplace(name, std::move(content));
  while (held_bytes_ > max_held_bytes_ && !held_.empty()) {
    spdlog::warn("profiles held in memory pass {} bytes: dropped the oldest, {}", max_held_bytes_,
                 held_.begin()->first);
    held_bytes_ -= held_.begin()->second.size();
    held_.erase(held_.begin());
  }
}

void ProfileSpool::write_held() {
  while (!held_.empty()) {
    auto oldest = held_.extract(held_.begin());
    held_bytes_ -= oldest.mapped().size();
    size_t before = held_.size();
    write_or_hold(oldest.key(), std::move(oldest.mapped()));
    if (held_.size() > before) return;  // held again: the directory still cannot be written
  }
}

std::optional<heartbeat::QueuedUpload> ProfileSpool::oldest_upload() {
  std::lock_guard lock(mutex_);
  auto files = sorted_files();
  if (!held_.empty() && (files.empty() || held_.begin()->first < files.front().filename())) {
    auto upload = parse_spool_file(held_.begin()->second);
    if (upload) return heartbeat::QueuedUpload{held_.begin()->first, std::move(*upload)};
  }
  for (const auto& path : files) {
    std::error_code error;
    uint64_t size = fs::file_size(path, error);
    auto content =
        !error && size <= kMaxFileBytes
            ? read_file(path)
            : Result<std::string>(Error::invalid_argument("unreadable or larger than 64 MiB"));
    auto upload = content ? parse_spool_file(std::move(*content))
                          : Result<heartbeat::CompressedUpload>(content.error());
    if (upload) return heartbeat::QueuedUpload{path.filename().string(), std::move(*upload)};
    spdlog::error("dropped the spooled profile {}: {}", path.string(), upload.error().message());
    fs::remove(path, error);
    recount();
  }
  return std::nullopt;
}

void ProfileSpool::remove_upload(const std::string& key) {
  if (key.find('/') != std::string::npos) return;  // keys are file names in the spool
  std::lock_guard lock(mutex_);
  if (auto held = held_.find(key); held != held_.end()) {
    held_bytes_ -= held->second.size();
    held_.erase(held);
    return;
  }
  std::error_code error;
  fs::remove(directory_ / key, error);
  if (error) {
    // Delivered all the same: remembered, so that it is not sent again, and removed later.
    if (delivered_.empty()) {
      spdlog::error("cannot remove the delivered profile {} from the spool: {}; it is skipped", key,
                    error.message());
    }
    delivered_.insert(key);
  }
  recount();
}

void ProfileSpool::remove_delivered() {
  for (auto it = delivered_.begin(); it != delivered_.end();) {
    std::error_code error;
    fs::remove(directory_ / *it, error);
    it = error ? std::next(it) : delivered_.erase(it);
  }
}

size_t ProfileSpool::files() const {
  std::lock_guard lock(mutex_);
  return files_ + held_.size();
}

uint64_t ProfileSpool::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_ + held_bytes_;
}

size_t ProfileSpool::held_files() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

uint64_t ProfileSpool::held_bytes() const {
  std::lock_guard lock(mutex_);
  return held_bytes_;
}

std::string ProfileSpool::write_error() const {
  std::lock_guard lock(mutex_);
  return write_error_;
}

}  // namespace dormant::agent
