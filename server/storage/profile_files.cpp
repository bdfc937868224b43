#include "server/storage/profile_files.h"

#include <algorithm>
#include <system_error>

#include "common/atomic_file.h"
#include "common/gzip.h"
#include "common/uuid.h"

namespace dormant::server::storage {
namespace {

constexpr std::string_view kSuffix = ".col.gz";

bool is_profile_file(const std::string& name) {
  return name.size() > kSuffix.size() && name.ends_with(kSuffix) && name.front() != '.';
}

// write_file_atomically's temporary files: ".<name>.tmp.XXXXXX".
bool is_temporary_file(const std::string& name) {
  return name.front() == '.' && name.find(std::string(kSuffix) + ".tmp.") != std::string::npos;
}

}  // namespace

Result<ProfileFiles::Written> ProfileFiles::write(std::string_view collapsed) const {
  auto compressed = gzip_compress(collapsed);
  if (!compressed) return std::move(compressed).take_error();
  Written written{random_uuid() + std::string(kSuffix), static_cast<int64_t>(compressed->size())};
  if (auto saved = write_file_atomically(path_of(written.file_name), *compressed, 0600); !saved) {
    // Failing before the rename, it removed its temporary file; failing after it (syncing the
    // folder), it leaves the file, which no row will name.
    remove(written.file_name);
    return std::move(saved).take_error();
  }
  return written;
}

Result<std::string> ProfileFiles::read(const std::string& file_name, int64_t raw_size) const {
  if (!is_profile_file(file_name) || file_name.find('/') != std::string::npos) {
    return Error::parse("\"" + file_name + "\" is not the name of a profile file");
  }
  auto compressed = read_file(path_of(file_name));
  if (!compressed) return std::move(compressed).take_error();
  auto text = gzip_decompress(*compressed, static_cast<size_t>(raw_size));
  if (!text) return std::move(text).take_error().with_context(path_of(file_name).string());
  return text;
}

void ProfileFiles::remove(const std::string& file_name) const {
  std::error_code ignored;
  std::filesystem::remove(path_of(file_name), ignored);
}

Result<int> ProfileFiles::remove_unreferenced(const std::set<std::string>& referenced) const {
  std::error_code error;
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    std::string name = entry.path().filename().string();
    bool stray = is_profile_file(name) ? !referenced.contains(name) : is_temporary_file(name);
    if (stray && std::filesystem::remove(entry.path(), error)) ++removed;
    if (error) return Error::from_errno("removing " + entry.path().string(), error.value());
  }
  if (error) return Error::from_errno("listing " + dir_.string(), error.value());
  return removed;
}

}  // namespace dormant::server::storage
