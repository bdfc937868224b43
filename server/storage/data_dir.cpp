#include "server/storage/data_dir.h"

#include <cerrno>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>

namespace dormant::server::storage {
namespace {

Result<void> make_directory(const std::filesystem::path& dir) {
  std::error_code error;
  if (std::filesystem::create_directories(dir, error)) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, error);
  }
  if (error) return Error::from_errno("creating directory " + dir.string(), error.value());
  return ok();
}

}  // namespace

Result<DataDir> DataDir::open(const std::filesystem::path& root) {
  if (auto made = make_directory(root); !made) return std::move(made).take_error();
  std::filesystem::path lock_path = root / "dormant.lock";
  UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) return Error::from_errno("open(" + lock_path.string() + ")");
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Error(ErrorKind::kUnavailable, "data directory " + root.string() +
                                                " is in use by another dormant-server (it holds " +
                                                lock_path.string() + ")");
    }
    return Error::from_errno("flock(" + lock_path.string() + ")");
  }
  DataDir dir(root, std::move(lock));
  if (auto made = make_directory(dir.profiles_dir()); !made) return std::move(made).take_error();
  return dir;
}

}  // namespace dormant::server::storage
