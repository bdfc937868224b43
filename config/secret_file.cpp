#include "config/secret_file.h"

#include <cstdio>

#include <unistd.h>

namespace dormant::config {

Result<void> check_secret_file(const struct stat& status, const std::string& what) {
  if ((status.st_mode & 077) == 0) return ok();
  // Root's, its group this process's (the agent's own), which may read it and do no more.
  if (status.st_uid == 0 && status.st_gid == ::getegid() && (status.st_mode & 037) == 0) {
    return ok();
  }
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", status.st_mode & 07777);
  return Error::invalid_argument(what + ": group or others may read it (mode " + mode +
                                 "); chmod 600 it, or make it root's and readable by the agent's "
                                 "group alone (chown root:GROUP, chmod 640)");
}

Result<void> check_config_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return ok();  // CLI11 has said what is wrong with it
  return check_secret_file(status, "--config " + path);
}

}  // namespace dormant::config
