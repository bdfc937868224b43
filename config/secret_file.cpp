#include "config/secret_file.h"

#include <cstdio>

namespace dormant::config {

Result<void> check_owner_only(const struct stat& status, const std::string& what) {
  if ((status.st_mode & 077) == 0) return ok();
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%04o", status.st_mode & 07777);
  return Error::invalid_argument(what + ": group or others may read it (mode " + mode +
                                 "); chmod 600 it");
}

Result<void> check_config_file(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return ok();  // CLI11 has said what is wrong with it
  return check_owner_only(status, "--config " + path);
}

}  // namespace dormant::config
