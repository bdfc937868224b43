// Crash-safe file replacement: after a crash the file holds either the old or the new content.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "common/result.h"

namespace dormant {

// Writes `content` to a temporary file beside `path`, fsyncs it, renames it over `path` and
// fsyncs the directory. The temporary file is removed on failure.
Result<void> write_file_atomically(const std::filesystem::path& path, std::string_view content,
                                   mode_t mode = 0644);

// The whole content of a (small) file.
Result<std::string> read_file(const std::filesystem::path& path);
// The rest of the open file `fd` (`name` in messages); an error once it passes `max_bytes`.
Result<std::string> read_rest(int fd, const std::string& name, size_t max_bytes = SIZE_MAX);

}  // namespace dormant
