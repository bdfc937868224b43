#include "profile/flamegraph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "profile/frame_paths.h"
#include "profile/frame_selection.h"

namespace dormant::profile {
namespace {

// ---- Text -------------------------------------------------------------------------------------

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// The length of the well-formed UTF-8 sequence at the start of `text` and its code point; 0 for
// anything else (a stray byte, a cut sequence, an overlong form, a surrogate, past U+10FFFF).
size_t utf8_sequence(std::string_view text, char32_t& code_point) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  }
  size_t length = 0;
  char32_t smallest = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code_point = lead & 0x1F, smallest = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code_point = lead & 0x0F, smallest = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code_point = lead & 0x07, smallest = 0x10000;
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
  if (code_point < smallest || code_point > 0x10FFFF || surrogate) return 0;
  return length;
}

// `text` as characters XML 1.0 allows: invalid UTF-8 and the non-characters U+FFFE/U+FFFF become
// U+FFFD, control characters (line breaks included) become spaces.
std::string displayable(std::string_view text) {
  std::string clean;
  clean.reserve(text.size());
  while (!text.empty()) {
    char32_t code_point = 0;
    size_t length = utf8_sequence(text, code_point);
    if (length == 0 || code_point == 0xFFFE || code_point == 0xFFFF) {
      clean += kReplacementCharacter;
      length = std::max<size_t>(length, 1);
    } else if (code_point < 0x20 || code_point == 0x7F) {
      clean += ' ';
    } else {
      clean += text.substr(0, length);
    }
    text.remove_prefix(length);
  }
  return clean;
}

// Text that is already displayable(), escaped for element content and attribute values.
void append_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
}

void append_text(std::string& out, std::string_view raw) { append_escaped(out, displayable(raw)); }

// What append_escaped() makes of `text`, in bytes.
size_t escaped_size(std::string_view text) {
  size_t size = text.size();
  for (char c : text) {
    if (c == '&') {
      size += 4;
    } else if (c == '<' || c == '>') {
      size += 3;
    } else if (c == '"' || c == '\'') {
      size += 5;
    }
  }
  return size;
}

bool starts_character(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }

// A frame's name as drawn: displayable, and past kMaxDrawnNameBytes cut to them with an ellipsis.
std::string drawn_name(std::string_view raw) {
  constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026
  std::string name = displayable(raw.substr(0, kMaxDrawnNameBytes));
  if (raw.size() <= kMaxDrawnNameBytes && name.size() <= kMaxDrawnNameBytes) return name;
  size_t end = kMaxDrawnNameBytes - kEllipsis.size();
  while (end > 0 && !starts_character(name[end])) --end;
  name.resize(end);
  name += kEllipsis;
  return name;
}

size_t count_code_points(std::string_view utf8) {
  return std::count_if(utf8.begin(), utf8.end(), starts_character);
}

// The first `n` characters of valid UTF-8 text.
std::string_view first_code_points(std::string_view utf8, size_t n) {
  size_t end = 0;
  for (size_t seen = 0; end < utf8.size(); ++end) {
    if (starts_character(utf8[end]) && seen++ == n) break;
  }
  return utf8.substr(0, end);
}

// snprintf, not std::to_chars: libstdc++'s floating-point formatting and its tables are pages that
// an agent rendering a session's flamegraph would be alone to map on most hosts, and would keep.
void append_fixed(std::string& out, double value, int decimals) {
  char text[64];
  int length = std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  if (length > 0) out.append(text, std::min(static_cast<size_t>(length), sizeof(text) - 1));
}

// 1234567 -> "1,234,567".
std::string with_thousands_separators(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped;
}

// The name of the box that stands for frames left out.
std::string left_out_name(uint64_t frames) {
  return "[" + with_thousands_separators(frames) + (frames == 1 ? " frame" : " frames") +
         " not drawn: past the flamegraph's limits]";
}

// ---- Colours ----------------------------------------------------------------------------------

// kLeftOut: the box that stands for the frames past the render's limits (FlamegraphOptions).
enum class FrameKind {
  kRoot,
  kProcess,
  kKernel,
  kGpu,
  kPython,
  kJava,
  kJavaScript,
  kNative,
  kLeftOut
};

// From the suffix or prefix the profilers give a frame's name: gProfiler's runtime suffixes, and
// V8's tiers in the names its perf maps give JavaScript functions.
FrameKind kind_of_frame(std::string_view name) {
  if (name.ends_with("_[k]")) return FrameKind::kKernel;
  // Kernels and copies, their streams and graphs, their devices (profilers/gpu).
  for (std::string_view gpu : {"[GPU", "[stream ", "[graph "}) {
    if (name.starts_with(gpu)) return FrameKind::kGpu;
  }
  if (name.ends_with("_[p]")) return FrameKind::kPython;
  for (std::string_view java : {"_[j]", "_[i]", "_[0]", "_[1]"}) {
    if (name.ends_with(java)) return FrameKind::kJava;
  }
  for (std::string_view v8 : {"JS:", "LazyCompile:", "InterpretedFunction:", "Function:"}) {
    if (name.starts_with(v8)) return FrameKind::kJavaScript;
  }
  return FrameKind::kNative;
}

// The class of a frame's <g>, for readers of the SVG and for tests; the colour is in its fill.
std::string_view class_name(FrameKind kind) {
  switch (kind) {
    case FrameKind::kRoot:
      return "root";
    case FrameKind::kProcess:
      return "process";
    case FrameKind::kKernel:
      return "kernel";
    case FrameKind::kGpu:
      return "gpu";
    case FrameKind::kPython:
      return "python";
    case FrameKind::kJava:
      return "java";
    case FrameKind::kJavaScript:
      return "javascript";
    case FrameKind::kNative:
      return "native";
    case FrameKind::kLeftOut:
      return "left-out";
  }
  return "native";
}

struct Rgb {
  int red, green, blue;
};

// Three numbers in [0, 1] that depend only on `name` (FNV-1a), so that a function keeps its shade
// from one render to the next.
struct Shade {
  double a, b, c;
};

Shade shade_of(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  auto part = [&](int shift) { return static_cast<double>((hash >> shift) & 0xFFFF) / 0xFFFF; };
  return {part(8), part(24), part(40)};
}

Rgb colour_of(FrameKind kind, std::string_view name) {
  const auto [a, b, c] = shade_of(name);
  auto channel = [](double base, double range, double shade) {
    return static_cast<int>(base + range * shade);
  };
  switch (kind) {
    case FrameKind::kRoot:
      return {200, 200, 205};
    case FrameKind::kProcess:
      return {channel(120, 40, a), channel(140, 40, a), channel(180, 40, a)};
    case FrameKind::kKernel:
      return {channel(235, 20, a), channel(160, 35, b), channel(90, 40, c)};
    case FrameKind::kGpu:
      return {channel(60, 60, a), channel(175, 60, b), channel(60, 40, c)};
    case FrameKind::kPython:
      return {channel(40, 50, a), channel(165, 50, b), channel(185, 50, b)};
    case FrameKind::kJava:
      return {channel(160, 50, a), channel(115, 40, b), channel(205, 45, a)};
    case FrameKind::kJavaScript:
      return {channel(215, 30, a), channel(195, 40, b), channel(40, 50, c)};
    case FrameKind::kNative:
      return {channel(205, 50, a), channel(20, 190, b), channel(10, 50, c)};
    case FrameKind::kLeftOut:
      return {170, 170, 170};
  }
  return {0, 0, 0};
}

// ---- Stacks in drawing order ------------------------------------------------------------------

// What a frame shows: its name and kind. The root, containers and process names are frames too.
struct FrameName {
  std::string_view name;
  FrameKind kind;
};

// Every distinct frame of a table numbered in flamegraph order (by name), so that stacks sort and
// compare as arrays of numbers. A process and a function with the same name get different ranks:
// they never merge.
class FrameRanks {
 public:
  static constexpr uint32_t kRoot = 0;

  explicit FrameRanks(const StackTable& table) {
    struct Distinct {
      FrameName frame;
      StringId id;  // of a function; unused for a process
    };
    std::vector<Distinct> distinct;
    std::vector<bool> seen_ids;
    table.for_each([&](const StackView& stack) {
      if (!stack.container.empty()) process_ranks_.try_emplace(stack.container, kRoot);
      process_ranks_.try_emplace(stack.comm, kRoot);
      for (StringId id : stack.frame_ids) {
        if (id >= seen_ids.size()) seen_ids.resize(id + 1, false);
        if (seen_ids[id]) continue;
        seen_ids[id] = true;
        std::string_view name = table.string(id);
        distinct.push_back({{name, kind_of_frame(name)}, id});
      }
    });
    for (const auto& [name, rank] : process_ranks_) {
      distinct.push_back({{name, FrameKind::kProcess}, 0});
    }
    std::sort(distinct.begin(), distinct.end(), [](const Distinct& a, const Distinct& b) {
      return std::tie(a.frame.name, a.frame.kind) < std::tie(b.frame.name, b.frame.kind);
    });

    frames_.reserve(distinct.size() + 1);
    frames_.push_back({"all", FrameKind::kRoot});
    frame_ranks_.assign(seen_ids.size(), kRoot);
    for (const auto& [frame, id] : distinct) {
      auto rank = static_cast<uint32_t>(frames_.size());
      frames_.push_back(frame);
      if (frame.kind == FrameKind::kProcess) {
        process_ranks_[frame.name] = rank;
      } else {
        frame_ranks_[id] = rank;
      }
    }
    bytes_.reserve(frames_.size());
    for (const FrameName& frame : frames_) {
      bytes_.push_back(2 * escaped_size(drawn_name(frame.name)) + 2);
    }
  }

  uint32_t of_function(StringId id) const { return frame_ranks_[id]; }
  uint32_t of_process(std::string_view name) const { return process_ranks_.at(name); }
  const FrameName& frame(uint32_t rank) const { return frames_[rank]; }
  // The most its name adds to a frame's markup: in the tooltip and in the label, escaped.
  size_t bytes(uint32_t rank) const { return bytes_[rank]; }

 private:
  std::vector<FrameName> frames_;      // by rank
  std::vector<size_t> bytes_;          // by rank
  std::vector<uint32_t> frame_ranks_;  // by StringId
  std::map<std::string_view, uint32_t> process_ranks_;
};

// The table's stacks as ranks ({container, comm, frames...}), sorted: the order in which
// flamegraphs lay them out from left to right.
class SortedStacks {
 public:
  // A stack as ranks, root first: its container's (when it has one), its process name's, then its
  // frames', read through the table's own ids: a profile's frames are not copied.
  class Path {
   public:
    Path(const FrameRanks& ranks, const StackView& stack)
        : ranks_(&ranks), frames_(stack.frame_ids) {
      if (!stack.container.empty()) head_[head_size_++] = ranks.of_process(stack.container);
      head_[head_size_++] = ranks.of_process(stack.comm);
    }
    size_t size() const { return head_size_ + frames_.size(); }
    uint32_t operator[](size_t i) const {
      return i < head_size_ ? head_[i] : ranks_->of_function(frames_[i - head_size_]);
    }

   private:
    const FrameRanks* ranks_;
    std::span<const StringId> frames_;
    uint32_t head_[2] = {0, 0};
    uint32_t head_size_ = 0;
  };
  struct Stack {
    Path path;
    uint64_t count;
  };

  SortedStacks(const StackTable& table, const FrameRanks& ranks) {
    stacks_.reserve(table.distinct_stacks());
    table.for_each([&](const StackView& stack) {
      stacks_.push_back({Path(ranks, stack), stack.count});
      longest_ = std::max(longest_, stacks_.back().path.size());
    });
    std::sort(stacks_.begin(), stacks_.end(),
              [](const Stack& a, const Stack& b) { return drawn_before(a.path, b.path); });
  }

  const std::vector<Stack>& stacks() const { return stacks_; }
  // The most frames one stack has, its container and process name included.
  size_t longest() const { return longest_; }

 private:
  // By name from the root up, except that a stack comes after the longer ones it begins: a frame's
  // own samples go to the right of its children, so that towers stand on the left of their base.
  static bool drawn_before(const Path& a, const Path& b) {
    const size_t common = std::min(a.size(), b.size());
    for (size_t i = 0; i < common; ++i) {
      if (a[i] != b[i]) return a[i] < b[i];
    }
    return a.size() > b.size();
  }

  std::vector<Stack> stacks_;
  size_t longest_ = 0;
};

// The most a frame may add to the SVG besides its name (FrameRanks::bytes), and what a frame with
// frames above it adds more for the box it may get.
struct FrameMarkup {
  size_t frame;
  size_t box;
};

// Walks the sorted stacks keeping only the frames of the current one open: sibling frames with
// the same name merge because sorted stacks that share them are neighbours. No tree is built: the
// frames wide enough to draw go to `selection` as they close, with what each may cost.
void place_frames(const SortedStacks& sorted, const FrameRanks& ranks, double min_count,
                  const FrameMarkup& markup, FrameSelection& selection) {
  std::vector<PlacedFrame> open = {{FrameRanks::kRoot, 0, 0, 0, kRootPath}};
  auto close_down_to = [&](size_t depth) {
    for (; open.size() > depth; open.pop_back()) {
      const PlacedFrame& frame = open.back();
      if (static_cast<double>(frame.count) < min_count && frame.depth != 0) continue;
      if (open.size() > 1) open[open.size() - 2].above += frame.above + 1;
      if (frame.depth == 0) {
        selection.offer(frame, 0);  // in the document's markup
      } else {
        size_t box = frame.above > 0 ? markup.box : 0;
        selection.offer(frame, markup.frame + ranks.bytes(frame.rank) + box);
      }
    }
  };
  uint64_t offset = 0;
  for (const SortedStacks::Stack& stack : sorted.stacks()) {
    const SortedStacks::Path& path = stack.path;
    size_t shared = 0;  // frames below the root this stack shares with the open ones
    while (shared < path.size() && shared + 1 < open.size() &&
           open[shared + 1].rank == path[shared]) {
      ++shared;
    }
    close_down_to(shared + 1);
    for (size_t i = shared; i < path.size(); ++i) {
      const FrameName& frame = ranks.frame(path[i]);
      open.push_back({path[i], static_cast<int>(i) + 1, offset, 0,
                      child_path(open.back().path, frame.name, frame.kind == FrameKind::kProcess)});
    }
    for (PlacedFrame& frame : open) frame.count += stack.count;
    open.back().own += stack.count;
    offset += stack.count;
  }
  close_down_to(0);
}

// ---- Layout -----------------------------------------------------------------------------------

constexpr double kSideMargin = 10;
constexpr double kTextPad = 3;            // between a frame's left edge and its label
constexpr double kCharWidthPerPx = 0.62;  // of a monospace font, per pixel of font size
constexpr double kBottomMargin = 26;      // room for the details line under the frames

struct Layout {
  double width;
  double left;        // of the frames, in pixels
  double plot_width;  // of the root frame
  double px_per_count;
  double frame_height;
  double font_size;
  double char_width;
  double text_rise;  // from a frame's top to its label's baseline
  double top;        // of the frames area
  double height;     // of the whole image

  double frame_y(int depth, int rows) const { return top + (rows - 1 - depth) * frame_height; }
};

Layout layout_for(const FlamegraphOptions& options, uint64_t total, int rows) {
  Layout layout;
  layout.width = std::max(options.width, 200);
  layout.left = kSideMargin;
  layout.plot_width = layout.width - 2 * kSideMargin;
  layout.px_per_count = total > 0 ? layout.plot_width / static_cast<double>(total) : 0;
  layout.frame_height = std::max(options.frame_height, 6);
  layout.font_size = std::clamp(layout.frame_height - 4, 6.0, 12.0);
  layout.char_width = layout.font_size * kCharWidthPerPx;
  layout.text_rise = std::round((layout.frame_height - 1 + layout.font_size * 0.7) / 2);
  layout.top = options.subtitle.empty() ? 40 : 58;
  layout.height = layout.top + rows * layout.frame_height + kBottomMargin;
  return layout;
}

int rows_of(const std::vector<PlacedFrame>& placed) {
  int deepest = 0;
  for (const PlacedFrame& frame : placed) deepest = std::max(deepest, frame.depth);
  return deepest + 1;
}

// `name` (displayable) as it fits in `width_px`: whole, or cut to at least two characters and
// "..", or nothing. The script's fitLabel() does the same after a zoom.
std::string fit_label(std::string_view name, double width_px, const Layout& layout) {
  double fits = std::floor((width_px - 2 * kTextPad) / layout.char_width);
  if (fits < 3) return "";
  auto max_chars = static_cast<size_t>(fits);
  if (count_code_points(name) <= max_chars) return std::string(name);
  if (max_chars < 4) return "";
  return std::string(first_code_points(name, max_chars - 2)) + "..";
}

// ---- SVG --------------------------------------------------------------------------------------

constexpr std::string_view kStyle = R"css(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { text-anchor: middle; fill: #555; }
#empty { font-size: 14px; text-anchor: middle; fill: #555; }
.control { cursor: pointer; fill: #1a4f8a; }
.control:hover { text-decoration: underline; }
#search, #matched { text-anchor: end; }
#frames > g { cursor: pointer; }
#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; }
#frames text { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  pointer-events: none; }
#frames .dimmed > rect { fill-opacity: 0.5; }
#frames .dimmed > text { fill-opacity: 0.55; }
.hidden { display: none; }
)css";

// Reads everything it needs from the document (attributes of #frames and of each frame, the name
// from the first line of each <title>), so no profile data is ever inside the script.
constexpr std::string_view kScript = R"js(
"use strict";
(function () {
  const svgNamespace = "http://www.w3.org/2000/svg";
  const highlightFill = "rgb(230,0,230)";
  const group = document.getElementById("frames");
  const details = document.getElementById("details");
  const matched = document.getElementById("matched");
  const unzoomControl = document.getElementById("unzoom");
  const searchControl = document.getElementById("search");
  const setting = (name) => parseFloat(group.getAttribute("data-" + name));
  const total = setting("total");
  const left = setting("left");
  const plotWidth = setting("plot-width");
  const charWidth = setting("char-width");
  const textPad = setting("text-pad");
  const textRise = setting("text-rise");
  const countName = group.getAttribute("data-count-name");

  const frames = Array.from(group.children, (g) => {
    const title = g.querySelector("title").textContent;
    const rect = g.querySelector("rect");
    return {
      g, rect,
      text: g.querySelector("text"),
      name: title.slice(0, title.indexOf("\n")),
      offset: parseFloat(g.getAttribute("data-offset")),
      count: parseFloat(g.getAttribute("data-count")),
      y: parseFloat(rect.getAttribute("y")),
      fill: rect.getAttribute("fill"),
    };
  });
  const frameByElement = new Map(frames.map((frame) => [frame.g, frame]));
  let searching = false;

  function fitLabel(name, width) {
    const fits = Math.floor((width - 2 * textPad) / charWidth);
    if (fits < 3) return "";
    const chars = Array.from(name);
    if (chars.length <= fits) return name;
    return fits < 4 ? "" : chars.slice(0, fits - 2).join("") + "..";
  }

  function place(frame, x, width) {
    frame.rect.setAttribute("x", x.toFixed(2));
    frame.rect.setAttribute("width", width.toFixed(2));
    const label = fitLabel(frame.name, width);
    if (!frame.text) {
      if (!label) return;
      frame.text = document.createElementNS(svgNamespace, "text");
      frame.text.setAttribute("y", (frame.y + textRise).toFixed(2));
      frame.g.appendChild(frame.text);
    }
    frame.text.setAttribute("x", (x + textPad).toFixed(2));
    frame.text.textContent = label;
  }

  function percentOfTotal(count) {
    return (100 * count / total).toFixed(2) + "%";
  }

  function describe(frame) {
    return frame.name + " (" + frame.count.toLocaleString("en-US") + " " + countName + ", " +
        percentOfTotal(frame.count) + ")";
  }

  function contains(outer, inner) {
    return outer.offset <= inner.offset && inner.offset + inner.count <= outer.offset + outer.count;
  }

  // The target spans the width; its ancestors stay, dimmed; everything else is hidden.
  function zoom(target) {
    const pxPerCount = plotWidth / target.count;
    for (const frame of frames) {
      const atOrAboveTarget = frame.y <= target.y;
      const inSubtree = atOrAboveTarget && contains(target, frame);
      const isAncestor = !atOrAboveTarget && contains(frame, target);
      frame.g.classList.toggle("hidden", !inSubtree && !isAncestor);
      frame.g.classList.toggle("dimmed", isAncestor);
      if (inSubtree) {
        place(frame, left + (frame.offset - target.offset) * pxPerCount, frame.count * pxPerCount);
      } else if (isAncestor) {
        place(frame, left, plotWidth);
      }
    }
    unzoomControl.classList.remove("hidden");
  }

  function unzoom() {
    const pxPerCount = plotWidth / total;
    for (const frame of frames) {
      frame.g.classList.remove("hidden", "dimmed");
      place(frame, left + frame.offset * pxPerCount, frame.count * pxPerCount);
    }
    unzoomControl.classList.add("hidden");
  }

  // A regular expression, or the literal text when it is not a valid one.
  function patternOf(term) {
    try {
      return new RegExp(term);
    } catch (error) {
      return new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    }
  }

  function search(term) {
    const pattern = patternOf(term);
    const hits = [];
    for (const frame of frames) {
      const hit = pattern.test(frame.name);
      frame.rect.setAttribute("fill", hit ? highlightFill : frame.fill);
      if (hit) hits.push(frame);
    }
    // A match inside another match stands for the same samples: count only the outermost ones.
    hits.sort((a, b) => a.offset - b.offset || b.count - a.count);
    let matchedCount = 0;
    let coveredTo = -1;
    for (const hit of hits) {
      if (hit.offset >= coveredTo) {
        matchedCount += hit.count;
        coveredTo = hit.offset + hit.count;
      }
    }
    matched.textContent = "Matched: " + percentOfTotal(matchedCount);
    searchControl.textContent = "Reset Search";
    searching = true;
  }

  function resetSearch() {
    for (const frame of frames) frame.rect.setAttribute("fill", frame.fill);
    matched.textContent = " ";
    searchControl.textContent = "Search";
    searching = false;
  }

  function promptSearch() {
    const term = window.prompt("Search for (regular expression or text):", "");
    if (term) search(term);
  }

  function frameOf(target) {
    const g = target.closest ? target.closest("#frames > g") : null;
    return g ? frameByElement.get(g) : undefined;
  }

  group.addEventListener("mouseover", (event) => {
    const frame = frameOf(event.target);
    if (frame) details.textContent = describe(frame);
  });
  group.addEventListener("mouseout", () => {
    details.textContent = " ";
  });
  group.addEventListener("click", (event) => {
    const frame = frameOf(event.target);
    if (!frame) return;
    if (frame.count === total) {
      unzoom();
    } else {
      zoom(frame);
    }
  });
  unzoomControl.addEventListener("click", unzoom);
  searchControl.addEventListener("click", () => (searching ? resetSearch() : promptSearch()));
  window.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "f") {
      event.preventDefault();
      promptSearch();
    } else if (event.key === "Escape") {
      resetSearch();
      unzoom();
    }
  });
})();
)js";
static_assert(kScript.find("]]>") == std::string_view::npos, "the script sits in a CDATA section");

class SvgWriter {
 public:
  SvgWriter(const FlamegraphOptions& options, const Layout& layout)
      : options_(options), layout_(layout) {}

  void open_document() {
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n<svg version=\"1.1\"";
    out_ += " xmlns=\"http://www.w3.org/2000/svg\"";
    attribute("width", layout_.width, 0);
    attribute("height", layout_.height, 0);
    out_ += " viewBox=\"0 0 ";
    append_fixed(out_, layout_.width, 0);
    out_ += ' ';
    append_fixed(out_, layout_.height, 0);
    out_ += "\">\n<style";
    nonce();
    out_ += '>';
    out_ += kStyle;
    out_ += "#frames text { font-size: ";
    append_fixed(out_, layout_.font_size, 0);
    out_ += "px; }\n</style>\n";
    out_ +=
        "<defs><linearGradient id=\"background\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"1\">"
        "<stop offset=\"5%\" stop-color=\"#eeeeee\"/><stop offset=\"95%\" stop-color=\"#eeeeb0\"/>"
        "</linearGradient></defs>\n";
    out_ += "<rect x=\"0\" y=\"0\"";
    attribute("width", layout_.width, 0);
    attribute("height", layout_.height, 0);
    out_ += " fill=\"url(#background)\"/>\n";
  }

  void headings() {
    double middle = layout_.width / 2;
    text_element("title", "", middle, 24, options_.title);
    if (!options_.subtitle.empty()) text_element("subtitle", "", middle, 42, options_.subtitle);
  }

  void controls() {
    text_element("unzoom", "control hidden", layout_.left, 24, "Reset Zoom");
    text_element("search", "control", layout_.width - kSideMargin, 24, "Search");
    double bottom_line = layout_.height - 9;
    text_element("details", "", layout_.left, bottom_line, " ");
    text_element("matched", "", layout_.width - kSideMargin, bottom_line, " ");
  }

  void empty_message() {
    text_element("empty", "", layout_.width / 2, layout_.top + 20, "No samples");
  }

  void frames(const FrameRanks& ranks, const std::vector<PlacedFrame>& placed, uint64_t total) {
    out_ += "<g id=\"frames\"";
    attribute("data-total", total);
    attribute("data-left", layout_.left, 2);
    attribute("data-plot-width", layout_.plot_width, 2);
    attribute("data-char-width", layout_.char_width, 4);
    attribute("data-text-pad", kTextPad, 2);
    attribute("data-text-rise", layout_.text_rise, 2);
    out_ += " data-count-name=\"";
    append_text(out_, options_.count_name);
    out_ += "\">\n";
    int rows = rows_of(placed);
    for (const PlacedFrame& frame : placed) {
      const double y = layout_.frame_y(frame.depth, rows);
      if (frame.left_out > 0) {
        const std::string name = left_out_name(frame.left_out);
        this->frame({name, FrameKind::kLeftOut}, frame, y, total);
      } else {
        this->frame(ranks.frame(frame.rank), frame, y, total);
      }
    }
    out_ += "</g>\n";
  }

  void script() {
    out_ += "<script type=\"text/ecmascript\"";
    nonce();
    out_ += "><![CDATA[";
    out_ += kScript;
    out_ += "]]></script>\n";
  }

  std::string close_document() && {
    out_ += "</svg>\n";
    return std::move(out_);
  }

  // Differential colours and tooltips against `baseline`, scaled so that the frame whose share
  // changed most is fully saturated.
  void compare_with(const PathCounts* baseline, const std::vector<PlacedFrame>& placed,
                    uint64_t total) {
    baseline_ = baseline;
    for (const PlacedFrame& frame : placed) {
      if (frame.left_out > 0) continue;
      largest_change_ = std::max(largest_change_, std::abs(change(frame, total)));
    }
  }

 private:
  double baseline_share(const PlacedFrame& frame) const {
    if (baseline_->total() == 0) return 0;
    return static_cast<double>(baseline_->at(frame.path)) / static_cast<double>(baseline_->total());
  }

  // Of the frame's share of all samples, in [-1, 1].
  double change(const PlacedFrame& frame, uint64_t total) const {
    return static_cast<double>(frame.count) / static_cast<double>(total) - baseline_share(frame);
  }

  Rgb change_colour(double change) const {
    if (largest_change_ <= 0 || change == 0) return {250, 250, 250};
    const double strength = std::abs(change) / largest_change_;
    const int faded = static_cast<int>(std::lround(230 - 190 * strength));
    return change > 0 ? Rgb{255, faded, faded} : Rgb{faded, faded, 255};
  }

  void nonce() {
    if (!options_.nonce.empty()) {
      out_ += " nonce=\"";
      append_text(out_, options_.nonce);
      out_ += '"';
    }
  }

  // <g class="kind" data-offset data-count><title>name\nN samples (P%)</title><rect/><text/></g>
  void frame(const FrameName& what, const PlacedFrame& where, double y, uint64_t total) {
    const std::string name = drawn_name(what.name);
    const bool compared = baseline_ != nullptr && what.kind != FrameKind::kLeftOut;
    const double x = layout_.left + static_cast<double>(where.offset) * layout_.px_per_count;
    const double width = static_cast<double>(where.count) * layout_.px_per_count;

    out_ += "<g class=\"";
    out_ += class_name(what.kind);
    out_ += '"';
    attribute("data-offset", where.offset);
    attribute("data-count", where.count);
    out_ += '>';
    tooltip(name, where, total, compared);
    out_ += "<rect";
    attribute("x", x, 2);
    attribute("y", y, 2);
    attribute("width", width, 2);
    attribute("height", layout_.frame_height - 1, 2);
    const Rgb fill =
        compared ? change_colour(change(where, total)) : colour_of(what.kind, what.name);
    out_ += " fill=\"rgb(" + std::to_string(fill.red) + ',' + std::to_string(fill.green) + ',' +
            std::to_string(fill.blue) + ")\" rx=\"2\"/>";
    if (std::string label = fit_label(name, width, layout_); !label.empty()) {
      out_ += "<text";
      attribute("x", x + kTextPad, 2);
      attribute("y", y + layout_.text_rise, 2);
      out_ += '>';
      append_escaped(out_, label);
      out_ += "</text>";
    }
    out_ += "</g>\n";
  }

  // "name\n1,234 samples (5.67%)", and with a baseline "\nbaseline 3.21%, +2.46 points": the
  // script takes the name from the first line.
  void tooltip(std::string_view displayable_name, const PlacedFrame& where, uint64_t total,
               bool compared) {
    const uint64_t count = where.count;
    out_ += "<title>";
    append_escaped(out_, displayable_name);
    out_ += '\n';
    out_ += with_thousands_separators(count);
    out_ += ' ';
    append_text(out_, options_.count_name);
    out_ += " (";
    append_fixed(out_, 100.0 * static_cast<double>(count) / static_cast<double>(total), 2);
    out_ += "%)";
    if (compared) {
      out_ += "\nbaseline ";
      append_fixed(out_, 100.0 * baseline_share(where), 2);
      const double points = 100.0 * change(where, total);
      out_ += points >= 0 ? "%, +" : "%, ";
      append_fixed(out_, points, 2);
      out_ += " points";
    }
    out_ += "</title>";
  }

  void text_element(std::string_view id, std::string_view css_class, double x, double y,
                    std::string_view raw_text) {
    out_ += "<text id=\"";
    out_ += id;
    out_ += '"';
    if (!css_class.empty()) {
      out_ += " class=\"";
      out_ += css_class;
      out_ += '"';
    }
    attribute("x", x, 2);
    attribute("y", y, 2);
    out_ += '>';
    append_text(out_, raw_text);
    out_ += "</text>\n";
  }

  void attribute(std::string_view name, double value, int decimals) {
    out_ += ' ';
    out_ += name;
    out_ += "=\"";
    append_fixed(out_, value, decimals);
    out_ += '"';
  }

  void attribute(std::string_view name, uint64_t value) {
    out_ += ' ';
    out_ += name;
    out_ += "=\"";
    out_ += std::to_string(value);
    out_ += '"';
  }

  const FlamegraphOptions& options_;
  const Layout& layout_;
  std::string out_;
  const PathCounts* baseline_ = nullptr;
  double largest_change_ = 0;
};

// A frame's element, attributes and tooltip hold some 200 characters and at most twelve numbers,
// none longer than the total's digits with separators or the image's size in pixels.
FrameMarkup frame_markup(const FlamegraphOptions& options, const Layout& largest, uint64_t total) {
  constexpr size_t kText = 200;
  constexpr size_t kNumbers = 12;
  constexpr size_t kBoxName = 64;
  auto digits = [](uint64_t value) { return std::to_string(value).size(); };
  const auto pixels = static_cast<uint64_t>(std::max(largest.width, largest.height)) + kTextPad;
  const size_t number = std::max({size_t{7}, digits(total) * 4 / 3 + 1, digits(pixels) + 3});
  const size_t frame = kText + kNumbers * number + escaped_size(displayable(options.count_name));
  return {frame, frame + kBoxName};
}

// What options.max_bytes leaves for the frames once the rest of the document is written.
size_t frame_bytes_budget(const FlamegraphOptions& options) {
  constexpr size_t kOtherMarkup = 4096;
  const size_t text = options.title.size() + options.subtitle.size() + options.count_name.size();
  const size_t rest =
      kStyle.size() + kScript.size() + kOtherMarkup + 6 * text + 2 * 6 * options.nonce.size();
  return options.max_bytes > rest ? options.max_bytes - rest : 0;
}

std::string render_empty(const FlamegraphOptions& options) {
  const Layout layout = layout_for(options, 0, 3);
  SvgWriter svg(options, layout);
  svg.open_document();
  svg.headings();
  svg.empty_message();
  return std::move(svg).close_document();
}

}  // namespace

std::string render_flamegraph(const StackTable& table, const FlamegraphOptions& options) {
  if (table.empty()) return render_empty(options);
  const uint64_t total = table.total_samples();
  const FrameRanks ranks(table);
  const SortedStacks sorted(table, ranks);
  // The root, the stack's frames and a row of boxes.
  const Layout tallest = layout_for(options, total, static_cast<int>(sorted.longest()) + 2);
  FrameSelection selection(options.max_frames, frame_bytes_budget(options));
  place_frames(sorted, ranks, options.min_frame_width_px / tallest.px_per_count,
               frame_markup(options, tallest, total), selection);
  const bool cut = selection.cut();
  std::vector<PlacedFrame> placed = selection.take();
  if (cut) placed = with_left_out_boxes(std::move(placed));
  const Layout layout = layout_for(options, total, rows_of(placed));

  SvgWriter svg(options, layout);
  std::optional<PathCounts> baseline;
  if (options.baseline != nullptr) {
    baseline.emplace(*options.baseline);
    svg.compare_with(&*baseline, placed, total);
  }
  svg.open_document();
  svg.headings();
  svg.controls();
  svg.frames(ranks, placed, total);
  svg.script();
  return std::move(svg).close_document();
}

}  // namespace dormant::profile
