#include "profile/frame_selection.h"

#include <algorithm>
#include <tuple>

namespace dormant::profile {
namespace {

bool by_place(const PlacedFrame& a, const PlacedFrame& b) {
  return std::tie(a.depth, a.offset) < std::tie(b.depth, b.offset);
}

}  // namespace

// Frames at one depth never overlap, so no two frames are equal in this order.
bool FrameSelection::drawn_first(const PlacedFrame& a, const PlacedFrame& b) {
  return std::tie(b.count, a.depth, a.offset) < std::tie(a.count, b.depth, b.offset);
}

void FrameSelection::offer(const PlacedFrame& frame, size_t bytes) {
  if (first_left_out_ && !drawn_first(frame, *first_left_out_)) return;
  kept_.push({frame, bytes});
  bytes_ += bytes;
  while (kept_.size() > max_frames_ || bytes_ > max_bytes_) {
    first_left_out_ = kept_.top().frame;
    bytes_ -= kept_.top().bytes;
    kept_.pop();
  }
}

std::vector<PlacedFrame> FrameSelection::take() {
  std::vector<PlacedFrame> frames;
  frames.reserve(kept_.size());
  for (; !kept_.empty(); kept_.pop()) frames.push_back(kept_.top().frame);
  std::sort(frames.begin(), frames.end(), by_place);
  bytes_ = 0;
  return frames;
}

std::vector<PlacedFrame> with_left_out_boxes(std::vector<PlacedFrame> kept) {
  const size_t n = kept.size();
  std::vector<uint64_t> new_offset(n, 0);
  std::vector<uint64_t> next_child(n, 0);  // where a frame's next kept child goes
  std::vector<uint64_t> kept_above(n, 0);  // the frames of its kept children's subtrees
  // The frames at depth d are kept[level[d]] to kept[level[d + 1]].
  std::vector<size_t> level = {0};
  for (size_t i = 0; i < n; ++i) {
    while (static_cast<int>(level.size()) <= kept[i].depth) level.push_back(i);
  }
  level.push_back(n);
  for (size_t i = 0; i < n; ++i) {
    const PlacedFrame& frame = kept[i];
    if (frame.depth > 0) {
      // The parent: the last frame one level down that starts at or before this one.
      auto first = kept.begin() + static_cast<ptrdiff_t>(level[frame.depth - 1]);
      auto last = kept.begin() + static_cast<ptrdiff_t>(level[frame.depth]);
      auto after = std::upper_bound(
          first, last, frame.offset,
          [](uint64_t offset, const PlacedFrame& other) { return offset < other.offset; });
      auto parent = static_cast<size_t>(after - kept.begin()) - 1;
      new_offset[i] = next_child[parent];
      next_child[parent] += frame.count;
      kept_above[parent] += frame.above + 1;
    }
    next_child[i] = new_offset[i];
  }
  std::vector<PlacedFrame> laid_out;
  laid_out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    PlacedFrame frame = kept[i];
    frame.offset = new_offset[i];
    laid_out.push_back(frame);
    if (frame.above > kept_above[i]) {
      uint64_t children = next_child[i] - new_offset[i];
      PlacedFrame box{0, frame.depth + 1, next_child[i], frame.count - frame.own - children, 0};
      box.left_out = frame.above - kept_above[i];
      laid_out.push_back(box);
    }
  }
  std::sort(laid_out.begin(), laid_out.end(), by_place);
  return laid_out;
}

}  // namespace dormant::profile
