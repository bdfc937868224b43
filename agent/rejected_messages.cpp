#include "agent/rejected_messages.h"

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "common/atomic_file.h"

namespace dormant::agent {

namespace fs = std::filesystem;

RejectedMessages::RejectedMessages(fs::path directory, size_t max_files, uint64_t max_bytes)
    : directory_(std::move(directory)), max_files_(max_files), max_bytes_(max_bytes) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory_, error)) {
    if (!entry.is_regular_file(error)) continue;
    uint64_t size = entry.file_size(error);
    if (error) continue;
    index_[entry.path().filename().string()] = size;
    bytes_ += size;
  }
}

bool RejectedMessages::make_directory() {
  if (::mkdir(directory_.c_str(), 0700) == 0 || errno == EEXIST) return true;
  spdlog::error("cannot create {}: {}", directory_.string(), std::strerror(errno));
  return false;
}

void RejectedMessages::make_room(uint64_t incoming) {
  while (!index_.empty() && (index_.size() + 1 > max_files_ || bytes_ + incoming > max_bytes_)) {
    auto oldest = index_.begin();
    std::error_code ignored;
    fs::remove(directory_ / oldest->first, ignored);
    spdlog::warn("rejected messages pass {} files or {} bytes: deleted the oldest, {}", max_files_,
                 max_bytes_, oldest->first);
    bytes_ -= oldest->second;
    index_.erase(oldest);
  }
}

void RejectedMessages::keep_file(const fs::path& from, uint64_t size) {
  std::error_code error;
  if (size > max_bytes_ || !make_directory()) {
    fs::remove(from, error);
    return;
  }
  make_room(size);
  std::string name = from.filename().string();
  fs::rename(from, directory_ / name, error);
  if (error) {
    spdlog::error("cannot move the rejected message {} to {}: {}; deleted it", from.string(),
                  directory_.string(), error.message());
    fs::remove(from, error);
    return;
  }
  index_[name] = size;
  bytes_ += size;
}

void RejectedMessages::keep_content(const std::string& name, const std::string& content) {
  if (content.size() > max_bytes_ || !make_directory()) return;
  make_room(content.size());
  auto written = write_file_atomically(directory_ / name, content, 0600);
  if (!written) {
    spdlog::error("cannot keep the rejected message {}: {}", name, written.error().message());
    return;
  }
  index_[name] = content.size();
  bytes_ += content.size();
}

}  // namespace dormant::agent
