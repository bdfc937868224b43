// The unwind tables read from real files (this process's libc, a program built without frame
// pointers and its stripped copy) and from files that try to make reading them cost too much.
#include "profilers/system/unwind_table.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "profilers/system/process_maps.h"

namespace dormant::profilers::system {
namespace {

// The row in force at `pc`.
const dormant_unwind_row* row_at(const UnwindTable& table, uint64_t pc) {
  const auto& rows = table.rows();
  auto after =
      std::upper_bound(rows.begin(), rows.end(), pc,
                       [](uint64_t at, const dormant_unwind_row& row) { return at < row.pc; });
  return after == rows.begin() ? nullptr : &*(after - 1);
}

// This process's executable mapping holding `address`.
Mapping mapping_of(const void* address) {
  auto mappings = executable_mappings(::getpid());
  EXPECT_TRUE(mappings.ok());
  auto at = reinterpret_cast<uint64_t>(address);
  for (const Mapping& mapping : *mappings) {
    if (mapping.start <= at && at < mapping.end) return mapping;
  }
  ADD_FAILURE() << "no executable mapping holds " << address;
  return {};
}

// The row in force at `address` of this process, read from the file mapped there.
struct LiveRow {
  UnwindTable table;
  const dormant_unwind_row* row = nullptr;
};
LiveRow live_row(const void* address) {
  Mapping mapping = mapping_of(address);
  auto table = UnwindTable::read(mapping.path);
  EXPECT_TRUE(table.ok()) << table.error().message();
  if (!table.ok()) return {};
  auto bias = table->segments().bias(mapping.start, mapping.offset);
  EXPECT_TRUE(bias.has_value());
  LiveRow live{std::move(*table)};
  live.row = row_at(live.table, reinterpret_cast<uint64_t>(address) - bias.value_or(0));
  return live;
}

int cfa_kind(const dormant_unwind_row& row) { return DORMANT_UNWIND_CFA_KIND(row.kinds); }
int fp_kind(const dormant_unwind_row& row) { return DORMANT_UNWIND_FP_KIND(row.kinds); }

TEST(UnwindTableTest, LibcsCallFrameInformationBecomesRowsByAddress) {
  Mapping libc = mapping_of(reinterpret_cast<const void*>(&::qsort));
  auto table = UnwindTable::read(libc.path);
  ASSERT_TRUE(table.ok()) << table.error().message();
  std::cout << libc.path << ": " << table->fdes() << " functions, " << table->rows().size()
            << " rows, " << table->fdes_left_out() << " left out\n";
  EXPECT_GT(table->fdes(), 1000u);
  EXPECT_GT(table->rows().size(), table->fdes());
  EXPECT_EQ(table->fdes_left_out(), 0u);
  EXPECT_TRUE(std::is_sorted(table->rows().begin(), table->rows().end(),
                             [](const auto& a, const auto& b) { return a.pc <= b.pc; }))
      << "rows are strictly by pc";
}

TEST(UnwindTableTest, AtAFunctionsFirstInstructionTheReturnAddressIsOnTopOfTheStack) {
  LiveRow entry = live_row(reinterpret_cast<const void*>(&::qsort));
  ASSERT_NE(entry.row, nullptr);
  EXPECT_EQ(cfa_kind(*entry.row), DORMANT_CFA_SP);
  EXPECT_EQ(entry.row->cfa_offset, 1) << "CFA = sp + 8";
  EXPECT_EQ(fp_kind(*entry.row), DORMANT_FP_SAME);
}

void ignore(int) {}

TEST(UnwindTableTest, TheSignalTrampolineIsASignalFrame) {
  struct sigaction action {};
  action.sa_handler = ignore;
  ASSERT_EQ(::sigaction(SIGUSR2, &action, nullptr), 0);
  struct sigaction installed {};
  ASSERT_EQ(::sigaction(SIGUSR2, nullptr, &installed), 0);
  ::signal(SIGUSR2, SIG_DFL);
  ASSERT_NE(installed.sa_restorer, nullptr) << "glibc gives every handler its trampoline";
  // A handler returns to the trampoline's first byte; a caller's row is looked up one byte back.
  auto restorer = reinterpret_cast<const char*>(installed.sa_restorer);
  LiveRow trampoline = live_row(restorer - 1);
  ASSERT_NE(trampoline.row, nullptr);
  EXPECT_EQ(cfa_kind(*trampoline.row), DORMANT_CFA_SIGNAL);
}

TEST(UnwindTableTest, AStrippedProgramKeepsEveryRowOfItsCallFrameInformation) {
  auto whole = UnwindTable::read(NO_FRAME_POINTERS);
  auto stripped = UnwindTable::read(NO_FRAME_POINTERS "_stripped");
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  ASSERT_TRUE(stripped.ok()) << stripped.error().message();
  ASSERT_GT(whole->rows().size(), 4u);
  ASSERT_EQ(whole->rows().size(), stripped->rows().size());
  for (size_t i = 0; i < whole->rows().size(); ++i) {
    EXPECT_EQ(whole->rows()[i].pc, stripped->rows()[i].pc);
    EXPECT_EQ(whole->rows()[i].kinds, stripped->rows()[i].kinds);
    EXPECT_EQ(whole->rows()[i].cfa_offset, stripped->rows()[i].cfa_offset);
  }
  // -O2 without frame pointers: functions find their caller from sp, never from rbp.
  size_t by_sp = std::count_if(whole->rows().begin(), whole->rows().end(),
                               [](const auto& row) { return cfa_kind(row) == DORMANT_CFA_SP; });
  size_t by_fp = std::count_if(whole->rows().begin(), whole->rows().end(),
                               [](const auto& row) { return cfa_kind(row) == DORMANT_CFA_FP; });
  EXPECT_GT(by_sp, 4u);
  EXPECT_EQ(by_fp, 0u);
}

TEST(UnwindTableTest, LazyBindingStubsGetTheirOwnRule) {
  auto table = UnwindTable::read(NO_FRAME_POINTERS);
  ASSERT_TRUE(table.ok()) << table.error().message();
  auto plt = std::find_if(table->rows().begin(), table->rows().end(),
                          [](const auto& row) { return cfa_kind(row) == DORMANT_CFA_PLT; });
  ASSERT_NE(plt, table->rows().end()) << "the program calls qsort through its PLT";
  EXPECT_EQ(plt->cfa_offset, 1);
  EXPECT_GE(plt->fp_offset, 10) << "the push's offset in a 16-byte stub";
}

TEST(UnwindTableTest, TablesPastTheirBoundsAreRefusedWhole) {
  Mapping libc = mapping_of(reinterpret_cast<const void*>(&::qsort));
  UnwindTableLimits few_rows;
  few_rows.max_rows = 100;
  auto rows = UnwindTable::read(libc.path, few_rows);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message().find("more than 100 unwind rows"), std::string::npos)
      << rows.error().message();
  UnwindTableLimits few_steps;
  few_steps.max_steps = 1000;
  auto steps = UnwindTable::read(libc.path, few_steps);
  ASSERT_FALSE(steps.ok());
  EXPECT_NE(steps.error().message().find("steps"), std::string::npos) << steps.error().message();
  UnwindTableLimits small_files;
  small_files.max_file_bytes = 4096;
  EXPECT_FALSE(UnwindTable::read(libc.path, small_files).ok());
}

TEST(UnwindTableTest, FilesThatAreNotElfOrHaveNoCallFrameInformationSaySo) {
  char path[] = "/tmp/unwind_table_test_XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "not an ELF file", 15), 15);
  ::close(fd);
  auto table = UnwindTable::read(path);
  ::unlink(path);
  EXPECT_FALSE(table.ok());
  EXPECT_FALSE(UnwindTable::read("/nonexistent/file").ok());
  EXPECT_FALSE(UnwindTable::read("/proc/self/status").ok());
}

}  // namespace
}  // namespace dormant::profilers::system
