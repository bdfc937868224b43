// The agent's API token, read from a file that only its owner may read.
#pragma once

#include <string>

#include "common/result.h"

namespace dormant::config {

// The file's first line, without surrounding white space. Refused when group or others may read
// or write the file, when it is not a regular file, or when it holds no token.
Result<std::string> read_token_file(const std::string& path);

}  // namespace dormant::config
