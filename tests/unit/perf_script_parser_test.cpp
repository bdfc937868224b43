#include "profilers/perf/perf_script_parser.h"

#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "profile/collapsed.h"

namespace dormant::profilers::perf {
namespace {

// "comm|frame|frame" (root first) → count.
std::map<std::string, uint64_t> stacks_of(const profile::StackTable& table) {
  std::map<std::string, uint64_t> stacks;
  table.for_each([&](const profile::StackView& stack) {
    std::string key(stack.comm);
    for (profile::StringId id : stack.frame_ids) key += "|" + std::string(table.string(id));
    stacks[key] += stack.count;
  });
  return stacks;
}

ParseStats parse_text(const std::string& text, profile::StackTable& table) {
  PerfScriptParser parser(table);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) parser.feed(line);
  parser.finish();
  return parser.stats();
}

std::string fixture() {
  std::ifstream file(PERF_SCRIPT_FIXTURE);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

constexpr const char* kLongName =
    "long_named_work<Nest<Nest<Nest<int, long, char>, Nest<short, float, double>, Nest<unsigned "
    "int, bool, void*> >, Nest<Nest<int, int, int>, Nest<long, long, long>, Nest<char, char, char> "
    ">, Nest<Nest<Vec, Vec, Vec>, Nest<Vec*, Vec*, Vec*>, Nest<int*, long*, char*> > > >";

// Recorded with perf 6.1 from tests/fakes/perf_fixture (see there): every sample's stack,
// root first, under the process name that has spaces and parentheses.
TEST(PerfScriptParser, RealPerfOutputWithEveryHardCase) {
  profile::StackTable table;
  ParseStats stats = parse_text(fixture(), table);
  EXPECT_EQ(stats.samples, 9u);
  EXPECT_EQ(stats.malformed_lines, 0u) << stats.first_malformed_line;
  const std::string libc = "my worker (1)|__libc_start_call_main";
  std::map<std::string, uint64_t> expected = {
      {"my worker (1)|[unknown]|__GI___libc_open|entry_SYSCALL_64_after_hwframe_[k]|"
       "do_syscall_64_[k]|__x64_sys_openat_[k]|do_sys_openat2_[k]|do_filp_open_[k]|"
       "path_openat_[k]|ext4_create_[k]|__dquot_initialize_[k]",
       1},
      {libc + "|" + kLongName, 1},
      {libc + "|Vec::operator+", 1},
      {libc + "|Vec::operator+=", 1},
      {libc + "|(anonymous namespace)::anonymous_work", 1},
      {libc + "|(/tmp/perf_fixture_lib_8287.so)", 1},  // a deleted library: no symbols left
      {libc + "|Lcom/example/Jit;run(I)V with spaces", 1},
      {libc + "|clock_gettime@@GLIBC_2.17", 1},
      {libc + "|(anonymous namespace)::anonymous_work|asm_sysvec_apic_timer_interrupt_[k]|"
              "sysvec_apic_timer_interrupt_[k]|__irq_exit_rcu_[k]|handle_softirqs_[k]",
       1},
  };
  EXPECT_EQ(stacks_of(table), expected);
}

TEST(PerfScriptParser, SemicolonInASymbolDoesNotSplitTheStackInTheCollapsedFile) {
  profile::StackTable table;
  parse_text(fixture(), table);
  std::string collapsed = profile::write_collapsed(table, nlohmann::json::object());
  EXPECT_NE(collapsed.find("0;;my worker (1);__libc_start_call_main;Lcom/example/Jit,run(I)V with "
                           "spaces 1\n"),
            std::string::npos)
      << collapsed;
  auto reread = profile::read_collapsed(collapsed);
  ASSERT_TRUE(reread.ok()) << reread.error().message();
  EXPECT_EQ(reread->stacks.total_samples(), 9u);
  EXPECT_EQ(reread->stacks.distinct_stacks(), 9u);
}

TEST(PerfScriptParser, EmptyCallChainCountsUnderTheProcessName) {
  profile::StackTable table;
  ParseStats stats = parse_text(
      "kworker/0:1-events  42/42   [000]  1520.9: 10101010 cpu-clock:ppp: \n\n"
      "kworker/0:1-events  42/42   [000]  1521.0: 10101010 cpu-clock:ppp: \n\n",
      table);
  EXPECT_EQ(stats.samples, 2u);
  EXPECT_EQ(stats.empty_stacks, 2u);
  EXPECT_EQ(stacks_of(table), (std::map<std::string, uint64_t>{{"kworker/0:1-events", 2}}));
}

TEST(PerfScriptParser, SamplesWithoutBlankLinesBetweenThemAndWithoutCpu) {
  profile::StackTable table;
  ParseStats stats = parse_text(
      "a 1/1 10.000001: 1 cpu-clock: \n"
      "\t 1000 f+0x1 (/bin/a)\n"
      "a 1/1 10.000002: 1 cpu-clock: \n"
      "\t 1000 f+0x1 (/bin/a)\n",
      table);
  EXPECT_EQ(stats.samples, 2u);
  EXPECT_EQ(stacks_of(table), (std::map<std::string, uint64_t>{{"a|f", 2}}));
}

TEST(PerfScriptParser, UnknownAndDeletedFrames) {
  std::string name;
  ASSERT_TRUE(parse_frame("\t 7f0000001234 [unknown] (/usr/lib/libgone.so.1 (deleted))", name));
  EXPECT_EQ(name, "(/usr/lib/libgone.so.1 (deleted))");
  ASSERT_TRUE(parse_frame("\t 0 [unknown] ([unknown])", name));
  EXPECT_EQ(name, "[unknown]");
  ASSERT_TRUE(parse_frame("\t 7ffd1234 [unknown] ([vdso])", name));
  EXPECT_EQ(name, "(vdso)");
  ASSERT_TRUE(parse_frame("\t ffffffffc0a01234 [unknown] ([kernel.kallsyms])", name));
  EXPECT_EQ(name, "(kernel.kallsyms)");
  ASSERT_TRUE(parse_frame("\t ffffffffc0a01234 nf_hook_slow+0x44 ([nf_conntrack])", name));
  EXPECT_EQ(name, "nf_hook_slow");
  ASSERT_TRUE(parse_frame("\t 4000 operator+(Big const&, Big const&)+0x1f (/srv/app)", name));
  EXPECT_EQ(name, "operator+(Big const&, Big const&)");
  ASSERT_TRUE(parse_frame("\t 4000 std::vector<int>::operator[]+0x0 (/srv/app)", name));
  EXPECT_EQ(name, "std::vector<int>::operator[]");
  ASSERT_TRUE(parse_frame("\t 4000 main (/usr/lib/libkernel32.so)", name));
  EXPECT_EQ(name, "main") << "a library named 'kernel' is not the kernel";
  EXPECT_FALSE(parse_frame("\t not-an-address sym (/x)", name));
}

TEST(PerfScriptParser, VeryLongFramesAreCut) {
  std::string symbol(10000, 'x');
  std::string name;
  ASSERT_TRUE(parse_frame("\t 1234 " + symbol + "+0x10 (/bin/big)", name));
  EXPECT_EQ(name, std::string(4096, 'x') + "...");
}

TEST(PerfScriptParser, GarbageIsCountedAndTheRestStillParses) {
  profile::StackTable table;
  ParseStats stats = parse_text(
      "this is not perf output\n"
      "\t 1234 orphan_frame (/bin/x)\n"
      "\n"
      "app 7/8 [001] 5.5: 1 cpu-clock: \n"
      "\t 1000 work+0x2 (/bin/app)\n"
      "\t 2000 main+0x9 (/bin/app)\n\n",
      table);
  EXPECT_EQ(stats.malformed_lines, 2u);
  EXPECT_EQ(stats.first_malformed_line, "this is not perf output");
  EXPECT_EQ(stacks_of(table), (std::map<std::string, uint64_t>{{"app|main|work", 1}}));
}

TEST(PerfScriptParser, HeaderParsing) {
  auto header = parse_sample_header("my 12/34 worker  1234/1240 [003]  99.000100: 1 cpu-clock:");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->comm, "my 12/34 worker");
  EXPECT_EQ(header->pid, 1234);
  EXPECT_EQ(header->tid, 1240);
  auto padded = parse_sample_header("            perf   77/77    12.5: 1 task-clock:");
  ASSERT_TRUE(padded);
  EXPECT_EQ(padded->comm, "perf");
  EXPECT_FALSE(parse_sample_header("no pid here: 1.5:"));
}

TEST(PerfScriptParser, PerProcessTables) {
  std::map<int, profile::StackTable> per_pid;
  PerfScriptParser parser([&](int pid) -> profile::StackTable& { return per_pid[pid]; });
  for (const char* line : {"a 1/1 1.0: 1 c:", "\t 10 f (/a)", "", "b 2/2 1.0: 1 c:", "\t 10 g (/b)",
                           "", "a 1/3 1.1: 1 c:", "\t 10 f (/a)", ""}) {
    parser.feed(line);
  }
  parser.finish();
  ASSERT_EQ(per_pid.size(), 2u);
  EXPECT_EQ(per_pid[1].total_samples(), 2u);
  EXPECT_EQ(per_pid[2].total_samples(), 1u);
}

}  // namespace
}  // namespace dormant::profilers::perf
