// A frame name taken from another process's memory or files: semicolons separate frames in the
// collapsed format and newlines end stacks, so a name keeps neither (';' becomes ':'), nor any
// other control character (each becomes '?').
#pragma once

#include <cstdint>
#include <string>

namespace dormant::profilers::system {

void clean_frame_text(std::string& text);

// Appends `code_point` as UTF-8; any past U+10FFFF as U+FFFD.
void append_utf8(std::string& text, uint32_t code_point);

}  // namespace dormant::profilers::system
