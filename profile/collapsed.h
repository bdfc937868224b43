// The gProfiler collapsed format: a first line "# {json header}", then one line per stack,
// "index;container;comm;frame;...;frame count", frames root first; without "index;" when the header
// says "application_metadata_enabled": false.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "profile/stack_table.h"

namespace dormant::profile {

// A frame as it can stand in a stack line: ';' (the separator) becomes ',' and line breaks
// become spaces, so that no symbol can split a stack or a line.
std::string sanitize_frame(std::string_view frame);

// Header and stacks, stacks sorted so that the same table always gives the same text; lines in
// the layout the header names.
std::string write_collapsed(const StackTable& stacks, const nlohmann::json& header);

struct CollapsedProfile {
  nlohmann::json header;
  StackTable stacks;
};

// The deepest stack a profile may hold: the profilers take at most 127 frames (perf's and the
// kernel's default), and a stack of millions would take minutes and gigabytes to draw.
inline constexpr size_t kMaxStackDepth = 2048;

// Rejects a malformed profile with the number of the first bad line and what is wrong with it:
// a stack deeper than kMaxStackDepth and counts that add up past 2^64 included.
Result<CollapsedProfile> read_collapsed(std::string_view text);

}  // namespace dormant::profile
