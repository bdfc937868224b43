// What can be saved from a command journal too large or too damaged to load: the command ids in
// it. The agent must not run again a command it has run, so every quoted UUID found in the file
// counts as received and executed. Read in chunks: a journal of any size costs a bounded amount
// of memory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace dormant::agent {

// The last `keep` distinct UUIDs quoted in the file (as JSON strings), in the order they appear.
std::vector<std::string> salvage_command_ids(const std::filesystem::path& path, size_t keep);

}  // namespace dormant::agent
