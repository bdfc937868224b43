#include "common/private_directory.h"

#include <cerrno>

#include <sys/stat.h>
#include <unistd.h>

namespace dormant {
namespace {

Result<void> check_existing(const std::filesystem::path& path, const struct stat& status) {
  const std::string name = path.string();
  if (S_ISLNK(status.st_mode)) {
    return Error::invalid_argument(name + " is a symbolic link: give the directory itself");
  }
  if (!S_ISDIR(status.st_mode)) return Error::invalid_argument(name + " is not a directory");
  if (status.st_uid != ::geteuid()) {
    return Error::invalid_argument(name + " belongs to uid " + std::to_string(status.st_uid) +
                                   ", not to this agent's (" + std::to_string(::geteuid()) + ")");
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Error::invalid_argument(name + " may be written by its group or by others (chmod go-w)");
  }
  return ok();
}

}  // namespace

Result<void> make_private_directory(const std::filesystem::path& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) == 0) return check_existing(path, status);
  if (errno != ENOENT) return Error::from_errno("lstat(" + path.string() + ")");
  if (path.has_parent_path() && path.parent_path() != path) {
    std::error_code error;
    std::filesystem::path parent = path.parent_path();
    if (!std::filesystem::exists(parent, error)) {
      if (auto made = make_private_directory(parent); !made) return made;
    }
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::from_errno("mkdir(" + path.string() + ")");
  }
  if (::lstat(path.c_str(), &status) != 0) return Error::from_errno("lstat(" + path.string() + ")");
  return check_existing(path, status);
}

}  // namespace dormant
