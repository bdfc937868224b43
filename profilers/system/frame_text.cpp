#include "profilers/system/frame_text.h"

namespace dormant::profilers::system {

void clean_frame_text(std::string& text) {
  for (char& c : text) {
    if (c == ';') c = ':';
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
}

void append_utf8(std::string& text, uint32_t code_point) {
  if (code_point < 0x80) {
    text.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    text.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    text.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x10000) {
    text.push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    text.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    text.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x110000) {
    text.push_back(static_cast<char>(0xf0 | (code_point >> 18)));
    text.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
    text.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    text.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    text += "\xef\xbf\xbd";  // U+FFFD
  }
}

}  // namespace dormant::profilers::system
