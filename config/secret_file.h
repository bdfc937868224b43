// Files that may hold the agent's token (its token file, its --config file): readable by their
// owner alone, or root's and readable by the agent's own group alone (so that the agent reads its
// settings but cannot rewrite them), or refused, with the fix in the error.
#pragma once

#include <string>

#include <sys/stat.h>

#include "common/result.h"

namespace dormant::config {

// `status` is the file's, `what` names it in the error ("--token-file /etc/dormant/token").
Result<void> check_secret_file(const struct stat& status, const std::string& what);

// The --config file at `path` (followed where it is a symbolic link, as it is read).
Result<void> check_config_file(const std::string& path);

}  // namespace dormant::config
