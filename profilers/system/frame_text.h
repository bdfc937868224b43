// A frame name taken from another process's memory or files: semicolons separate frames in the
// collapsed format and newlines end stacks, so a name keeps neither (';' becomes ':'), nor any
// other control character (each becomes '?').
#pragma once

#include <string>

namespace dormant::profilers::system {

void clean_frame_text(std::string& text);

}  // namespace dormant::profilers::system
