// A directory that only this process's user may change: the agent's state and its local
// profiles. Everything it writes there is trusted later (journal, spool) or private (profiles).
#pragma once

#include <filesystem>

#include "common/result.h"

namespace dormant {

// Creates `path` (and its missing parents) with mkdir(0700), or accepts an existing directory
// that is not a symbolic link (opened with O_NOFOLLOW), is owned by this user and that neither its
// group nor others may write; the error says which it is not.
Result<void> make_private_directory(const std::filesystem::path& path);

}  // namespace dormant
