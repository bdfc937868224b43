// The flamegraph of a StackTable as one self-contained SVG: the root ("all") at the bottom, then
// the container, the process name and the frames growing upwards. Opened in a browser, it shows
// tooltips with counts and percentages, zooms on click and highlights searches (Ctrl-F).
#pragma once

#include <cstddef>
#include <string>

#include "profile/stack_table.h"

namespace dormant::profile {

// A frame's name is cut to this many bytes, with an ellipsis, in the SVG.
inline constexpr size_t kMaxDrawnNameBytes = 1024;
inline constexpr size_t kDefaultMaxFrames = 50000;

struct FlamegraphOptions {
  std::string title = "Flamegraph";
  std::string subtitle;  // a second, smaller line under the title when not empty
  int width = 1200;      // pixels
  int frame_height = 16;
  // Frames narrower than this (and everything above them) are left out, which keeps the size of
  // the SVG bounded whatever the size of the profile.
  double min_frame_width_px = 0.1;
  // Frames drawn at most, and the size of the SVG at most (an estimate that never falls short):
  // past either, the narrowest frames are left out (the deepest, then the rightmost, among equally
  // wide ones), and each frame that lost frames above it gets one box that says how many frames
  // and samples it stands for. A box is drawn besides the frames, in the bytes.
  size_t max_frames = kDefaultMaxFrames;
  size_t max_bytes = 16 << 20;
  std::string count_name = "samples";  // what one count is, in tooltips
  // With a baseline, a differential flamegraph: frames as wide as this table's samples, each
  // coloured by how its share of all samples changed from the baseline's share at the same place:
  // red grew, blue shrank, white did not change. Its tooltip gives both shares.
  const StackTable* baseline = nullptr;
  // The Content-Security-Policy nonce of the response that serves the SVG, on its <style> and
  // <script>; empty for a file.
  std::string nonce;
};

// Every string from the table is escaped (and invalid UTF-8 replaced), so any frame name is safe.
std::string render_flamegraph(const StackTable& table, const FlamegraphOptions& options = {});

}  // namespace dormant::profile
