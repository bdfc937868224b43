// Issue 22, server 1: the worst profiles an upload may hold (16 MiB of collapsed text, stacks of
// 2048 frames) drawn as flamegraphs. An 8 M-frame stack once drew a 1.8 GB SVG with 2.2 GB of
// memory; every accepted profile now draws at most 16 MB with at most 256 MB more memory, and the
// frames left out show as boxes that say how many they are.
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profile/collapsed.h"
#include "profile/flamegraph.h"

namespace dormant::profile {
namespace {

constexpr size_t kUploadCap = 16 << 20;  // decompressed, the server's default
constexpr size_t kMostSvgBytes = 16'000'000;
constexpr long kMostPeakKb = 256'000;

// Collapsed text of at most kUploadCap bytes: stacks of `depth` frames, the first frame of each
// its own so that no two stacks merge, the rest named `name`.
std::string distinct_stacks(size_t depth, const std::string& name) {
  std::string tail;
  for (size_t i = 1; i < depth; ++i) tail += ";" + name;
  std::string text = "# {}\n";
  for (size_t i = 0;; ++i) {
    std::string line = "0;;app;root" + std::to_string(i) + tail + " 1\n";
    if (text.size() + line.size() > kUploadCap) return text;
    text += line;
  }
}

long status_kb(const char* field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with(field)) return std::stol(line.substr(line.find(':') + 1));
  }
  return -1;
}

struct Drawn {
  size_t bytes = 0;
  long peak_kb = 0;  // above the memory in use before the profile was read
  size_t left_out_boxes = 0;
  size_t longest_name = 0;  // in a tooltip, unescaped
};

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

size_t longest_tooltip_name(const std::string& svg) {
  size_t longest = 0;
  for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) {
    size_t end = svg.find('\n', at);
    std::string name = svg.substr(at + 7, end - at - 7);
    // Each entity stands for one character.
    longest = std::max(longest, name.size() - 5 * occurrences(name, "&quot;"));
  }
  return longest;
}

// Reads and draws `text` in a child process, whose peak memory is its own.
Drawn draw_in_child(const std::string& text) {
  int pipe_fds[2];
  EXPECT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    Drawn drawn;
    const long before = status_kb("VmRSS:");
    std::ofstream("/proc/self/clear_refs") << "5";  // VmHWM starts again from here
    auto parsed = read_collapsed(text);
    if (parsed) {
      std::string svg = render_flamegraph(parsed->stacks);
      drawn.bytes = svg.size();
      drawn.left_out_boxes = occurrences(svg, "<g class=\"left-out\"");
      drawn.longest_name = longest_tooltip_name(svg);
    }
    drawn.peak_kb = status_kb("VmHWM:") - before;
    ssize_t written = write(pipe_fds[1], &drawn, sizeof(drawn));
    _exit(parsed && written == sizeof(drawn) ? 0 : 1);
  }
  close(pipe_fds[1]);
  Drawn drawn;
  EXPECT_EQ(read(pipe_fds[0], &drawn, sizeof(drawn)), static_cast<ssize_t>(sizeof(drawn)));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed: " << status;
  return drawn;
}

void expect_within_bounds(const Drawn& drawn) {
  std::printf("SVG %zu bytes, %zu boxes for frames left out, peak +%ld kB\n", drawn.bytes,
              drawn.left_out_boxes, drawn.peak_kb);
  EXPECT_LE(drawn.bytes, kMostSvgBytes);
  EXPECT_GT(drawn.left_out_boxes, 0u);
#ifdef __SANITIZE_ADDRESS__
  std::printf("peak memory not checked: the address sanitizer's shadow and quarantine add to it\n");
#else
  EXPECT_LE(drawn.peak_kb, kMostPeakKb);
#endif
}

// 4,083 stacks of 2,048 frames, each frame 0.3 px wide: 8.4 M frames. Before: 1.49 GB, 28 s.
TEST(HostileProfileRender, DeepDistinctStacksDrawWithinTheBounds) {
  expect_within_bounds(draw_in_child(distinct_stacks(kMaxStackDepth, "f")));
}

// 11,200 stacks of 740 frames, each 0.105 px wide: as many frames as the width lets through.
TEST(HostileProfileRender, ManyNarrowDistinctStacksDrawWithinTheBounds) {
  std::string text = distinct_stacks(740, "f");
  expect_within_bounds(draw_in_child(text));
}

// 7 stacks of 2,048 frames named by 1,100 quotes, each six bytes once escaped. Before: 99 MB.
TEST(HostileProfileRender, LongNamesAreCutAt1KiBAndDrawWithinTheBounds) {
  Drawn drawn = draw_in_child(distinct_stacks(kMaxStackDepth, std::string(1100, '"')));
  expect_within_bounds(drawn);
  EXPECT_LE(drawn.longest_name, kMaxDrawnNameBytes);
  EXPECT_GT(drawn.longest_name, kMaxDrawnNameBytes - 8);
}

// Past max_frames the narrowest frames go: over the frame that lost them, one box as wide as
// their samples, after the frames kept, that says how many frames it stands for.
TEST(HostileProfileRender, FramesPastTheLimitBecomeOneBoxPerParent) {
  StackTable table;
  using Frames = std::vector<std::string_view>;
  table.add("", "app", Frames{"main", "a", "x"}, 4);
  table.add("", "app", Frames{"main", "b", "y"}, 2);
  table.add("", "app", Frames{"main", "c"}, 1);
  table.add("", "app", Frames{"main"}, 1);
  FlamegraphOptions options;
  options.max_frames = 5;  // all, app, main, a, x
  std::string svg = render_flamegraph(table, options);
  EXPECT_EQ(occurrences(svg, "<g class="), 6u) << svg;
  EXPECT_NE(svg.find("<g class=\"left-out\" data-offset=\"4\" data-count=\"3\"><title>[3 frames "
                     "not drawn: past the flamegraph&apos;s limits]\n3 samples (37.50%)"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>x\n4 samples"), std::string::npos);
  EXPECT_EQ(svg.find("<title>b\n"), std::string::npos);

  options.max_frames = kDefaultMaxFrames;
  EXPECT_EQ(render_flamegraph(table, options).find("left-out"), std::string::npos);
}

}  // namespace
}  // namespace dormant::profile
