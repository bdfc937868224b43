#include "common/private_directory.h"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace dormant {
namespace {

// Opens `path` without following a symbolic link there, and checks what it opened.
Result<void> check_existing(const std::filesystem::path& path) {
  const std::string name = path.string();
  UniqueFd directory(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!directory) {
    int error = errno;
    struct stat link {};
    if ((error == ELOOP || error == ENOTDIR) && ::lstat(path.c_str(), &link) == 0) {
      if (S_ISLNK(link.st_mode)) {
        return Error::invalid_argument(name + " is a symbolic link: give the directory itself");
      }
      return Error::invalid_argument(name + " is not a directory");
    }
    return Error::from_errno("open(" + name + ")", error);
  }
  struct stat status {};
  if (::fstat(directory.get(), &status) != 0) return Error::from_errno("fstat(" + name + ")");
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
  if (::lstat(path.c_str(), &status) == 0) return check_existing(path);
  if (errno != ENOENT) return Error::from_errno("lstat(" + path.string() + ")");
  if (path.has_parent_path() && path.parent_path() != path) {
    std::error_code error;
    std::filesystem::path parent = path.parent_path();
    if (!std::filesystem::exists(parent, error)) {
      if (auto made = make_private_directory(parent); !made) return made;
    }
  }
  // 0700 from the start (the umask can only take bits away), never chmod'ed after.
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return Error::from_errno("mkdir(" + path.string() + ")");
  }
  return check_existing(path);
}

}  // namespace dormant
