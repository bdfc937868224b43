// Which frames a flamegraph draws when a profile has more than the render may take: the widest
// first, and for the rest one box per parent that says how many frames and samples it stands for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

namespace dormant::profile {

// A frame wide enough to draw, at its place in the flamegraph; or, with left_out > 0, the box
// that stands for frames left out.
struct PlacedFrame {
  uint32_t rank;    // the frame's name (flamegraph.cpp's FrameRanks); unused for a box
  int depth;        // 0 for the root
  uint64_t offset;  // counts to the left of the frame
  uint64_t count;
  uint64_t path;          // frame_paths.h; 0 for a box
  uint64_t own = 0;       // samples of the stacks that end at this frame
  uint64_t above = 0;     // frames wide enough to draw in the subtree above this one
  uint64_t left_out = 0;  // for a box: the frames it stands for
};

// Keeps the frames offered to it while they fit in `max_frames` and `max_bytes`, the widest first
// (then the shallowest, then the leftmost): a prefix of that order, decided as frames come, so it
// never holds more than it keeps. A parent is at least as wide as its children and shallower, so
// the parent of every frame kept is kept.
class FrameSelection {
 public:
  FrameSelection(size_t max_frames, size_t max_bytes)
      : max_frames_(max_frames), max_bytes_(max_bytes) {}

  // `bytes`: what drawing the frame may add to the SVG, at most.
  void offer(const PlacedFrame& frame, size_t bytes);
  // Whether a frame offered was left out.
  bool cut() const { return first_left_out_.has_value(); }
  // The frames kept, sorted by depth, then offset.
  std::vector<PlacedFrame> take();

  static bool drawn_first(const PlacedFrame& a, const PlacedFrame& b);

 private:
  struct Kept {
    PlacedFrame frame;
    size_t bytes;
  };
  struct DrawnLast {
    bool operator()(const Kept& a, const Kept& b) const { return drawn_first(a.frame, b.frame); }
  };

  size_t max_frames_;
  size_t max_bytes_;
  size_t bytes_ = 0;
  std::priority_queue<Kept, std::vector<Kept>, DrawnLast> kept_;  // the one drawn last on top
  std::optional<PlacedFrame> first_left_out_;  // it and every frame after it are left out
};

// The frames a cut selection kept (sorted by depth, then offset) laid out again with the boxes:
// over each frame, its kept children from the left in their order, then one box for the frames
// left out of its subtree above it, then its own samples. Sorted by depth, then offset.
std::vector<PlacedFrame> with_left_out_boxes(std::vector<PlacedFrame> kept);

}  // namespace dormant::profile
