#include "profilers/system/frame_text.h"

namespace dormant::profilers::system {

void clean_frame_text(std::string& text) {
  for (char& c : text) {
    if (c == ';') c = ':';
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
}

}  // namespace dormant::profilers::system
