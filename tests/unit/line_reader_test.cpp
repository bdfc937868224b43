#include "common/line_reader.h"

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace dormant {
namespace {

struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    read_end.reset(fds[0]);
    write_end.reset(fds[1]);
  }
  void write(std::string_view data) {
    ASSERT_EQ(::write(write_end.get(), data.data(), data.size()),
              static_cast<ssize_t>(data.size()));
  }
  UniqueFd read_end, write_end;
};

std::vector<std::string> all_lines(LineReader& reader) {
  std::vector<std::string> lines;
  for (;;) {
    auto line = reader.next();
    EXPECT_TRUE(line.ok());
    if (!line.ok() || !line->has_value()) return lines;
    lines.emplace_back(**line);
  }
}

TEST(LineReader, SplitsLinesAcrossWritesAndKeepsALastLineWithoutNewline) {
  Pipe pipe;
  LineReader reader(pipe.read_end.get());
  std::thread writer([&] {
    pipe.write("first li");
    pipe.write("ne\n\nsecond\nthi");
    pipe.write("rd");
    pipe.write_end.reset();
  });
  auto lines = all_lines(reader);
  writer.join();
  EXPECT_EQ(lines, (std::vector<std::string>{"first line", "", "second", "third"}));
  EXPECT_EQ(reader.bytes_read(), 24u);
}

TEST(LineReader, CutsOverlongLinesIntoPieces) {
  Pipe pipe;
  LineReader reader(pipe.read_end.get(), 4);
  pipe.write("abcdefghij\nxy\n");
  pipe.write_end.reset();
  EXPECT_EQ(all_lines(reader), (std::vector<std::string>{"abcd", "efgh", "ij", "xy"}));
  EXPECT_EQ(reader.split_lines(), 2u);
}

// Lines longer than the buffer a reader starts with come whole, up to max_line.
TEST(LineReader, ALineLongerThanItsFirstBufferComesWhole) {
  Pipe pipe;
  LineReader reader(pipe.read_end.get(), 300 * 1024);
  std::string long_line(200 * 1024, 'x');
  std::string longer_line(300 * 1024 + 5, 'y');
  std::thread writer([&] {
    pipe.write("short\n" + long_line + "\n" + longer_line + "\nlast\n");
    pipe.write_end.reset();
  });
  auto lines = all_lines(reader);
  writer.join();
  EXPECT_EQ(lines, (std::vector<std::string>{"short", long_line, std::string(300 * 1024, 'y'),
                                             "yyyyy", "last"}));
  EXPECT_EQ(reader.split_lines(), 1u);
}

TEST(LineReader, DeadlineWithoutACompleteLine) {
  Pipe pipe;
  LineReader reader(pipe.read_end.get());
  pipe.write("partial");
  auto line = reader.next(deadline_after(std::chrono::milliseconds(50)));
  ASSERT_FALSE(line.ok());
  EXPECT_EQ(line.error().kind(), ErrorKind::kTimeout);
  pipe.write(" line\n");
  auto later = reader.next(deadline_after(std::chrono::seconds(5)));
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(**later, "partial line");
}

}  // namespace
}  // namespace dormant
