#include "profile/flamegraph.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/subprocess.h"

namespace dormant::profile {
namespace {

using Frames = std::vector<std::string_view>;

// A profile whose names try to break the SVG: markup, quotes, a CDATA end, invalid UTF-8.
StackTable nasty_table() {
  StackTable table;
  table.add("web-container", "nginx", Frames{"main", "std::vector<int>::push_back", "memcpy"}, 3);
  table.add("web-container", "nginx", Frames{"main", "std::vector<int>::push_back"}, 1);
  table.add("web-container", "nginx", Frames{"main", "write", "ksys_write_[k]"}, 2);
  table.add("", "say \"hi\" & 'bye'", Frames{"operator<<", "]]>", "bad\xff\x01utf8"}, 2);
  table.add("", "python3", Frames{"<module>_[p]", "run_[p]"}, 1);
  table.add("", "cuda_app", Frames{"launch", "[GPU] gemm(float*)"}, 1);
  return table;  // 10 samples
}

// One drawn frame, read back from the SVG.
struct DrawnFrame {
  std::string kind;     // the class of its <g>
  std::string name;     // escaped, as in the SVG
  std::string numbers;  // the tooltip's second line: "3 samples (30.00%)"
  uint64_t offset = 0;
  uint64_t count = 0;
  double x = 0, y = 0, width = 0;
  std::string fill;
  std::string label;  // the text drawn in the frame, escaped
};

// The text between `open` and the next `close` after it; empty when there is none.
std::string between(std::string_view text, std::string_view open, std::string_view close) {
  size_t begin = text.find(open);
  if (begin == std::string_view::npos) return "";
  begin += open.size();
  size_t end = text.find(close, begin);
  return end == std::string_view::npos ? "" : std::string(text.substr(begin, end - begin));
}

std::string attribute_of(std::string_view element, std::string_view name) {
  return between(element, " " + std::string(name) + "=\"", "\"");
}

// Each frame is <g class="kind" data-offset data-count><title>name\nnumbers</title><rect .../>
// and, when there is room, <text ...>label</text>, then </g>.
DrawnFrame parse_frame(std::string_view g) {
  DrawnFrame frame;
  std::string head = "<g" + between(g, "<g", ">") + ">";
  frame.kind = attribute_of(head, "class");
  frame.offset = std::stoull(attribute_of(head, "data-offset"));
  frame.count = std::stoull(attribute_of(head, "data-count"));
  std::string title = between(g, "<title>", "</title>");
  frame.name = title.substr(0, title.find('\n'));
  frame.numbers = title.substr(title.find('\n') + 1);
  std::string rect = between(g, "<rect", "/>");
  frame.x = std::stod(attribute_of(rect, "x"));
  frame.y = std::stod(attribute_of(rect, "y"));
  frame.width = std::stod(attribute_of(rect, "width"));
  frame.fill = attribute_of(rect, "fill");
  std::string text = between(g, "<text", "</text>");
  frame.label = text.substr(std::min(text.find('>') + 1, text.size()));
  return frame;
}

std::vector<DrawnFrame> drawn_frames(std::string_view svg) {
  std::vector<DrawnFrame> frames;
  size_t at = svg.find("<g id=\"frames\"");
  if (at == std::string_view::npos) return frames;
  while ((at = svg.find("<g class=", at)) != std::string_view::npos) {
    size_t end = svg.find("</g>", at);
    frames.push_back(parse_frame(svg.substr(at, end - at)));
    at = end;
  }
  return frames;
}

std::optional<DrawnFrame> find_frame(const std::vector<DrawnFrame>& frames,
                                     std::string_view escaped_name) {
  auto found = std::find_if(frames.begin(), frames.end(),
                            [&](const DrawnFrame& frame) { return frame.name == escaped_name; });
  if (found == frames.end()) return std::nullopt;
  return *found;
}

size_t occurrences(std::string_view text, std::string_view part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

// Empty when xmllint accepts `svg`, otherwise what it (or running it) said.
std::string xml_errors(const std::string& svg) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("flamegraph_test_" + std::to_string(getpid()) + ".svg");
  std::ofstream(path, std::ios::binary) << svg;
  auto lint =
      run_command({"xmllint", "--noout", path.string()}, deadline_after(std::chrono::seconds(30)));
  std::filesystem::remove(path);
  if (!lint.ok()) return "running xmllint: " + lint.error().message();
  return lint->status.success() ? "" : lint->status.describe() + ": " + lint->stderr_text;
}

bool have_xmllint() {
  auto lint = run_command({"xmllint", "--version"}, deadline_after(std::chrono::seconds(30)));
  return lint.ok() && lint->status.success();
}

TEST(Flamegraph, IsWellFormedXmlWhateverTheNames) {
  if (!have_xmllint()) GTEST_SKIP() << "xmllint is not installed (apt-get install libxml2-utils)";
  std::string svg = render_flamegraph(nasty_table());
  EXPECT_EQ(xml_errors(svg), "") << svg;
  EXPECT_TRUE(svg.starts_with("<?xml")) << svg.substr(0, 100);
}

TEST(Flamegraph, EscapesNamesAndShowsCountsAndPercentages) {
  std::string svg = render_flamegraph(nasty_table());
  auto frames = drawn_frames(svg);
  ASSERT_FALSE(frames.empty()) << svg;

  auto all = find_frame(frames, "all");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->numbers, "10 samples (100.00%)");
  auto push_back = find_frame(frames, "std::vector&lt;int&gt;::push_back");
  ASSERT_TRUE(push_back);
  EXPECT_EQ(push_back->count, 4u);  // two stacks through it merge
  EXPECT_EQ(push_back->numbers, "4 samples (40.00%)");
  auto comm = find_frame(frames, "say &quot;hi&quot; &amp; &apos;bye&apos;");
  ASSERT_TRUE(comm);
  EXPECT_EQ(comm->kind, "process");
  EXPECT_EQ(comm->numbers, "2 samples (20.00%)");
  EXPECT_TRUE(find_frame(frames, "operator&lt;&lt;"));
  EXPECT_TRUE(find_frame(frames, "]]&gt;"));
  EXPECT_TRUE(find_frame(frames, "bad\xEF\xBF\xBD utf8"));  // U+FFFD, and a space for \x01
  EXPECT_EQ(find_frame(frames, "web-container")->kind, "process");
  EXPECT_EQ(find_frame(frames, "run_[p]")->kind, "python");
  EXPECT_EQ(find_frame(frames, "[GPU] gemm(float*)")->kind, "gpu");

  EXPECT_EQ(svg.find("<int>"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "]]>"), 1u);  // only the end of the script's CDATA section
  EXPECT_EQ(occurrences(svg, "</script>"), 1u);
}

TEST(Flamegraph, FramesAreColouredByTheirRuntime) {
  StackTable table;
  table.add("", "java",
            Frames{"start_thread", "java.lang.Thread.run_[0]", "Work.loop_[1]", "Work.hot_[j]",
                   "Work.inlined_[i]", "StubRoutines (1)"},
            1);
  table.add("", "node",
            Frames{"node::Start(int, char**)", "JS:*work /app/a.js:3:1",
                   "LazyCompile:~old /app/b.js:1", "write_[k]"},
            1);
  auto frames = drawn_frames(render_flamegraph(table));
  for (const char* java :
       {"java.lang.Thread.run_[0]", "Work.loop_[1]", "Work.hot_[j]", "Work.inlined_[i]"}) {
    ASSERT_TRUE(find_frame(frames, java)) << java;
    EXPECT_EQ(find_frame(frames, java)->kind, "java") << java;
  }
  for (const char* native : {"start_thread", "StubRoutines (1)", "node::Start(int, char**)"}) {
    EXPECT_EQ(find_frame(frames, native)->kind, "native") << native;
  }
  EXPECT_EQ(find_frame(frames, "JS:*work /app/a.js:3:1")->kind, "javascript");
  EXPECT_EQ(find_frame(frames, "LazyCompile:~old /app/b.js:1")->kind, "javascript");
  EXPECT_EQ(find_frame(frames, "write_[k]")->kind, "kernel");
  EXPECT_NE(find_frame(frames, "Work.hot_[j]")->fill,
            find_frame(frames, "JS:*work /app/a.js:3:1")->fill);
}

TEST(Flamegraph, RespectsOptionsInTheText) {
  FlamegraphOptions options;
  options.title = "CPU <profile> & more";
  options.subtitle = "host \"a\"";
  options.count_name = "events";
  std::string svg = render_flamegraph(nasty_table(), options);
  EXPECT_NE(svg.find("CPU &lt;profile&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("host &quot;a&quot;"), std::string::npos);
  EXPECT_EQ(find_frame(drawn_frames(svg), "all")->numbers, "10 events (100.00%)");
}

int red_of(const std::string& fill) { return std::stoi(fill.substr(fill.find('(') + 1)); }
int blue_of(const std::string& fill) { return std::stoi(fill.substr(fill.rfind(',') + 1)); }

TEST(Flamegraph, KernelFramesAreOrangeAndColoursAreStable) {
  auto frames = drawn_frames(render_flamegraph(nasty_table()));
  auto kernel = find_frame(frames, "ksys_write_[k]");
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel->kind, "kernel");
  EXPECT_GE(red_of(kernel->fill), 200) << kernel->fill;
  EXPECT_LE(blue_of(kernel->fill), 100) << kernel->fill;
  EXPECT_EQ(find_frame(frames, "memcpy")->kind, "native");

  StackTable other;
  other.add("", "other", Frames{"x", "y", "ksys_write_[k]"}, 7);
  EXPECT_EQ(find_frame(drawn_frames(render_flamegraph(other)), "ksys_write_[k]")->fill,
            kernel->fill);
}

TEST(Flamegraph, RootAtTheBottomThenContainerCommAndFramesUpwards) {
  auto frames = drawn_frames(render_flamegraph(nasty_table()));
  auto all = find_frame(frames, "all");
  for (const DrawnFrame& frame : frames) {
    if (frame.name != "all") {
      EXPECT_LT(frame.y, all->y) << frame.name;
    }
  }
  double container_y = find_frame(frames, "web-container")->y;
  double comm_y = find_frame(frames, "nginx")->y;
  EXPECT_LT(container_y, all->y);
  EXPECT_LT(comm_y, container_y);
  EXPECT_LT(find_frame(frames, "main")->y, comm_y);
  EXPECT_LT(find_frame(frames, "ksys_write_[k]")->y, find_frame(frames, "write")->y);
}

TEST(Flamegraph, SiblingsAreSortedByName) {
  StackTable table;
  table.add("", "app", Frames{"zeta"}, 5);
  table.add("", "app", Frames{"alpha"}, 1);
  table.add("", "app", Frames{"mid"}, 2);
  auto frames = drawn_frames(render_flamegraph(table));
  EXPECT_EQ(find_frame(frames, "alpha")->offset, 0u);
  EXPECT_EQ(find_frame(frames, "mid")->offset, 1u);
  EXPECT_EQ(find_frame(frames, "zeta")->offset, 3u);
  EXPECT_LT(find_frame(frames, "alpha")->x, find_frame(frames, "mid")->x);
  EXPECT_LT(find_frame(frames, "mid")->x, find_frame(frames, "zeta")->x);
}

TEST(Flamegraph, MergesSiblingsOnlyAndKeepsSelfTime) {
  StackTable table;
  table.add("", "a", Frames{"main", "work"}, 3);
  table.add("", "a", Frames{"main"}, 2);  // samples in main itself
  table.add("", "a", Frames{"main", "work", "leaf"}, 1);
  table.add("", "b", Frames{"main", "work"}, 4);
  auto frames = drawn_frames(render_flamegraph(table));
  std::vector<uint64_t> main_counts, work_counts;
  for (const DrawnFrame& frame : frames) {
    if (frame.name == "main") main_counts.push_back(frame.count);
    if (frame.name == "work") work_counts.push_back(frame.count);
  }
  EXPECT_EQ(main_counts, (std::vector<uint64_t>{6, 4}));  // one per process, in a before b
  EXPECT_EQ(work_counts, (std::vector<uint64_t>{4, 4}));
  EXPECT_EQ(find_frame(frames, "leaf")->count, 1u);
  // Children start at their parent's left edge; the parent's own samples are on the right.
  EXPECT_EQ(find_frame(frames, "work")->offset, find_frame(frames, "main")->offset);
}

TEST(Flamegraph, EveryFrameSitsOnItsParent) {
  auto frames = drawn_frames(render_flamegraph(nasty_table()));
  double row = find_frame(frames, "all")->y;
  for (const DrawnFrame& frame : frames) {
    if (frame.name == "all") continue;
    bool on_parent = std::any_of(frames.begin(), frames.end(), [&](const DrawnFrame& below) {
      return below.y > frame.y && below.y - frame.y < 20 && below.offset <= frame.offset &&
             frame.offset + frame.count <= below.offset + below.count;
    });
    EXPECT_TRUE(on_parent) << frame.name;
    EXPECT_LT(frame.y, row);
  }
}

TEST(Flamegraph, LeavesOutFramesTooNarrowToSee) {
  StackTable table;
  table.add("", "app", Frames{"busy", "busier"}, 1'000'000);
  table.add("", "app", Frames{"rare", "rarer"}, 1);  // ~0.001 px wide at 1200 px
  std::string svg = render_flamegraph(table);
  auto frames = drawn_frames(svg);
  EXPECT_TRUE(find_frame(frames, "busier"));
  EXPECT_FALSE(find_frame(frames, "rare"));
  EXPECT_FALSE(find_frame(frames, "rarer"));
  EXPECT_EQ(svg.find("rare"), std::string::npos);

  FlamegraphOptions draw_everything;
  draw_everything.min_frame_width_px = 0;
  EXPECT_TRUE(find_frame(drawn_frames(render_flamegraph(table, draw_everything)), "rarer"));
}

TEST(Flamegraph, LabelsAreCutToFitTheirFrame) {
  StackTable table;
  std::string long_name(300, 'x');
  table.add("", "app", Frames{"short"}, 1);
  table.add("", "app", Frames{long_name}, 1);
  table.add("", "app", Frames{"tiny"}, 1);
  table.add("", "app", Frames{"wide"}, 1000);
  auto frames = drawn_frames(render_flamegraph(table));
  auto cut = find_frame(frames, long_name);
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->label, "");  // ~1 px: no room for a label
  auto wide = find_frame(frames, "wide");
  EXPECT_EQ(wide->label, "wide");

  StackTable half_and_half;
  half_and_half.add("", "app", Frames{long_name}, 1);
  half_and_half.add("", "app", Frames{"other"}, 1);
  auto half = find_frame(drawn_frames(render_flamegraph(half_and_half)), long_name);
  ASSERT_TRUE(half);
  EXPECT_TRUE(half->label.ends_with("..")) << half->label;
  EXPECT_LT(half->label.size(), long_name.size());
  EXPECT_GT(half->label.size(), 40u);
  EXPECT_LT(static_cast<double>(half->label.size()) * 7.4, half->width);  // 12 px monospace
}

TEST(Flamegraph, EmptyTableSaysSo) {
  std::string svg = render_flamegraph(StackTable());
  EXPECT_NE(svg.find("No samples"), std::string::npos);
  EXPECT_TRUE(drawn_frames(svg).empty());
  if (!have_xmllint()) GTEST_SKIP() << "xmllint is not installed (apt-get install libxml2-utils)";
  EXPECT_EQ(xml_errors(svg), "") << svg;
}

TEST(Flamegraph, ANonceMarksTheStyleAndTheScriptOnly) {
  FlamegraphOptions options;
  options.nonce = "abc123+/=";
  std::string svg = render_flamegraph(nasty_table(), options);
  EXPECT_NE(svg.find("<style nonce=\"abc123+/=\">"), std::string::npos);
  EXPECT_NE(svg.find("<script type=\"text/ecmascript\" nonce=\"abc123+/=\">"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "nonce="), 2u);
  EXPECT_EQ(render_flamegraph(nasty_table()).find("nonce="), std::string::npos);
}

// A differential flamegraph: widths from the new table, colours and tooltips from how each
// frame's share changed. Baseline: handle 50% (parse 25%, write 25%), idle 50%. New: handle 75%
// (parse 60%, write 15%), idle 25%; "cache" is new.
TEST(Flamegraph, DifferentialColoursGrowthRedAndShrinkageBlue) {
  StackTable baseline;
  baseline.add("", "web", Frames{"handle", "parse"}, 25);
  baseline.add("", "web", Frames{"handle", "write"}, 25);
  baseline.add("", "web", Frames{"wait"}, 50);
  StackTable now;
  now.add("", "web", Frames{"handle", "parse"}, 120);
  now.add("", "web", Frames{"handle", "write"}, 30);
  now.add("", "web", Frames{"wait"}, 40);
  now.add("", "web", Frames{"cache"}, 10);
  FlamegraphOptions options;
  options.baseline = &baseline;
  std::string svg = render_flamegraph(now, options);
  auto frames = drawn_frames(svg);

  auto parse = find_frame(frames, "parse");
  auto write = find_frame(frames, "write");
  auto wait = find_frame(frames, "wait");
  auto cache = find_frame(frames, "cache");
  ASSERT_TRUE(parse && write && wait && cache) << svg;
  EXPECT_EQ(parse->count, 120u) << "widths are the new profile's";
  EXPECT_EQ(parse->numbers, "120 samples (60.00%)\nbaseline 25.00%, +35.00 points");
  EXPECT_EQ(write->numbers, "30 samples (15.00%)\nbaseline 25.00%, -10.00 points");
  EXPECT_EQ(wait->numbers, "40 samples (20.00%)\nbaseline 50.00%, -30.00 points");
  EXPECT_EQ(cache->numbers, "10 samples (5.00%)\nbaseline 0.00%, +5.00 points");
  // The largest change is fully saturated; growth red, shrinkage blue, paler when smaller.
  EXPECT_EQ(parse->fill, "rgb(255,40,40)");
  EXPECT_EQ(wait->fill, "rgb(67,67,255)");
  EXPECT_EQ(write->fill, "rgb(176,176,255)");
  EXPECT_EQ(cache->fill, "rgb(255,203,203)");
  auto process = find_frame(frames, "web");
  ASSERT_TRUE(process);
  EXPECT_EQ(process->fill, "rgb(250,250,250)") << "100% before and after: no change";
  if (!have_xmllint()) GTEST_SKIP() << "xmllint is not installed (apt-get install libxml2-utils)";
  EXPECT_EQ(xml_errors(svg), "");
}

TEST(Flamegraph, DifferentialPlacesAreNamesFromTheRootNotIds) {
  // The same function under another caller, or a process named like a function, is another place.
  StackTable baseline;
  baseline.add("", "app", Frames{"a", "work"}, 10);
  baseline.add("", "work", Frames{}, 10);
  StackTable now;
  now.intern("padding that shifts every string id");
  now.add("", "app", Frames{"b", "work"}, 10);
  now.add("", "app", Frames{"a", "work"}, 10);
  FlamegraphOptions options;
  options.baseline = &baseline;
  auto frames = drawn_frames(render_flamegraph(now, options));
  std::vector<std::string> work_tooltips;
  for (const DrawnFrame& frame : frames) {
    if (frame.name == "work") work_tooltips.push_back(frame.numbers);
  }
  std::sort(work_tooltips.begin(), work_tooltips.end());
  ASSERT_EQ(work_tooltips.size(), 2u);
  EXPECT_EQ(work_tooltips[0], "10 samples (50.00%)\nbaseline 0.00%, +50.00 points");  // under b
  EXPECT_EQ(work_tooltips[1], "10 samples (50.00%)\nbaseline 50.00%, +0.00 points");  // under a
}

}  // namespace
}  // namespace dormant::profile
