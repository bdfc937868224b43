#include "agent/profile_spool.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "common/atomic_file.h"

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;
constexpr std::string_view kSuffix = ".upload";
constexpr uint64_t kMaxFileBytes = 64 << 20;
constexpr size_t kMaxEndTimeBytes = 64;

Result<wire::CompressedUpload> parse_spool_file(std::string content) {
  size_t newline = content.find('\n');
  if (newline == std::string::npos || newline > kMaxEndTimeBytes) {
    return Error::invalid_argument("no end time on its first line");
  }
  wire::CompressedUpload upload;
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
                                                         uint64_t max_held_bytes,
                                                         size_t max_files) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) {
    return Error(ErrorKind::kSystem,
                 "cannot create the spool " + directory.string() + ": " + error.message());
  }
  std::unique_ptr<ProfileSpool> spool(new ProfileSpool(
      std::move(directory), max_bytes, max_held_bytes, std::max<size_t>(max_files, 1)));
  std::lock_guard lock(spool->mutex_);
  spool->index_directory();
  if (!spool->index_.empty()) {
    spdlog::info("{} profiles ({} bytes) from an earlier run wait for upload", spool->index_.size(),
                 spool->bytes_);
  }
  return spool;
}

void ProfileSpool::index_directory() {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory_, error)) {
    if (!is_spool_file(entry)) continue;
    uint64_t size = entry.file_size(error);
    if (error) continue;
    std::string name = entry.path().filename().string();
    // Names are "<stamp>-<sequence>.upload", a zero-padded time in milliseconds first.
    int64_t stamp = 0;
    std::from_chars(name.data(), name.data() + name.size(), stamp);
    last_stamp_ = std::max(last_stamp_, stamp);
    index_.emplace(std::move(name), size);
    bytes_ += size;
  }
}

void ProfileSpool::unindex(const std::string& name) {
  auto found = index_.find(name);
  if (found == index_.end()) return;
  bytes_ -= found->second;
  index_.erase(found);
}

void ProfileSpool::drop_oldest() {
  std::string name = index_.begin()->first;
  std::error_code error;
  fs::remove(directory_ / name, error);
  spdlog::warn("upload spool full ({} files or {} bytes at most): dropped the oldest profile {}",
               max_files_, max_bytes_, name);
  unindex(name);
}

Result<void> ProfileSpool::add(const wire::CompressedUpload& upload) {
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
  while (!index_.empty() &&
         (bytes_ + content.size() > max_bytes_ || index_.size() + held_.size() + 1 > max_files_)) {
    drop_oldest();
  }
  std::string name = next_name_stem() + std::string(kSuffix);
  remove_delivered();
  write_held();
  write_or_hold(name, std::move(content));
  return {};
}

std::string ProfileSpool::next_name_stem() {
  // The wall clock in milliseconds, but never a stamp at or before the last one: a clock stepped
  // back must not put a new profile before those that wait.
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  last_stamp_ = std::max(now, last_stamp_ + 1);
  char stem[48];
  std::snprintf(stem, sizeof(stem), "%015lld-%06llu", static_cast<long long>(last_stamp_),
                static_cast<unsigned long long>(sequence_++ % 1'000'000));
  return stem;
}

void ProfileSpool::write_or_hold(const std::string& name, std::string content) {
  auto written = write_file_atomically(directory_ / name, content, 0600);
  if (written) {
    if (!write_error_.empty()) {
      spdlog::info("the upload spool {} is written again", directory_.string());
      write_error_.clear();
    }
    bytes_ += content.size();
    index_[name] = content.size();
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
  // Gone, or a file in its place (a file system that fails): what it holds is out of reach for
  // now, not lost.
  std::error_code error;
  bool reachable = fs::is_directory(directory_, error);
  if (!held_.empty() &&
      (!reachable || index_.empty() || held_.begin()->first < index_.begin()->first)) {
    auto upload = parse_spool_file(held_.begin()->second);
    if (upload) return heartbeat::QueuedUpload{held_.begin()->first, std::move(*upload)};
  }
  while (reachable && !index_.empty()) {
    auto [name, size] = *index_.begin();
    fs::path path = directory_ / name;
    auto content = size <= kMaxFileBytes
                       ? read_file(path)
                       : Result<std::string>(Error::invalid_argument("larger than 64 MiB"));
    auto upload = content ? parse_spool_file(std::move(*content))
                          : Result<wire::CompressedUpload>(content.error());
    if (upload) return heartbeat::QueuedUpload{name, std::move(*upload)};
    spdlog::error("dropped the spooled profile {}: {}", path.string(), upload.error().message());
    fs::remove(path, error);
    unindex(name);
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
  if (!index_.contains(key)) return;
  unindex(key);
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
}

void ProfileSpool::reject_upload(const std::string& key, const std::string& why) {
  if (key.find('/') != std::string::npos) return;
  std::lock_guard lock(mutex_);
  spdlog::error("the server refused the profile {} for good: {}; moved it to {}", key, why,
                rejected_.directory().string());
  if (auto held = held_.find(key); held != held_.end()) {
    rejected_.keep_content(key, held->second);
    held_bytes_ -= held->second.size();
    held_.erase(held);
    return;
  }
  auto found = index_.find(key);
  if (found == index_.end()) return;
  uint64_t size = found->second;
  unindex(key);
  rejected_.keep_file(directory_ / key, size);
}

void ProfileSpool::keep_rejected_completion(const std::string& command_id,
                                            const std::string& json) {
  // The id came from the server: only its letters, digits and dashes name the file.
  std::string id;
  for (char c : command_id.substr(0, 64)) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') id += c;
  }
  std::lock_guard lock(mutex_);
  rejected_.keep_content(next_name_stem() + "-completion-" + id + ".json", json);
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
  return index_.size() + held_.size();
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

size_t ProfileSpool::rejected_files() const {
  std::lock_guard lock(mutex_);
  return rejected_.files();
}

std::string ProfileSpool::write_error() const {
  std::lock_guard lock(mutex_);
  return write_error_;
}

}  // namespace dormant::agent
