// Issue 22, agent 1: ELF files crafted so that a loader copying each symbol's name would take
// gigabytes. Each is loaded as the agent loads any file a process maps, and what it holds is
// compared with the file's size.
#include "profilers/system/elf_symbols.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tests/support/crafted_elf.h"
#include "tests/support/memory_meter.h"

#include "common/deadline.h"
#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "profilers/system/demangle.h"
#include "profilers/system/symbolizer.h"
#include "profilers/system/xz_decompress.h"

namespace dormant::profilers::system {
namespace {

namespace fs = std::filesystem;
using testing::crafted_elf;
using testing::CraftedElf;
using testing::shared_object_header;

class ElfSymbolsAttack : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() /
            ("dormant-elf-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    for (auto [at, size] : mapped_) ::munmap(at, size);
    for (const fs::path& file : copies_) fs::remove(file);
    fs::remove(path_);
  }

  // A sparse file (no disk used) whose header claims `sections` section headers.
  void write_section_claim(uint64_t sections) {
    UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    Elf64_Ehdr header = shared_object_header();
    header.e_shoff = sizeof(header);
    header.e_shentsize = sizeof(Elf64_Shdr);
    Elf64_Shdr first{};
    first.sh_size = sections;  // e_shnum 0: the count is here
    ASSERT_EQ(::pwrite(fd.get(), &header, sizeof(header), 0), ssize_t{sizeof(header)});
    ASSERT_EQ(::pwrite(fd.get(), &first, sizeof(first), sizeof(header)), ssize_t{sizeof(first)});
    ASSERT_EQ(::ftruncate(fd.get(), sizeof(header) + sections * sizeof(Elf64_Shdr)), 0);
  }

  // `count` copies of `elf`, each mapped executable by this process as a library would be.
  void map_copies(const CraftedElf& elf, int count) {
    std::string bytes = crafted_elf(elf);
    for (int i = 0; i < count; ++i) {
      copies_.push_back(path_.string() + "-" + std::to_string(i));
      std::ofstream(copies_.back(), std::ios::binary) << bytes;
      UniqueFd fd(::open(copies_.back().c_str(), O_RDONLY | O_CLOEXEC));
      ASSERT_TRUE(fd);
      void* at = ::mmap(nullptr, bytes.size(), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd.get(), 0);
      ASSERT_NE(at, MAP_FAILED);
      mapped_.emplace_back(at, bytes.size());
    }
  }

  size_t write(const CraftedElf& elf) {
    std::string bytes = crafted_elf(elf);
    std::ofstream(path_, std::ios::binary) << bytes;
    return bytes.size();
  }
  // The name of symbol `i` of a crafted file, looked up as a sampled address would be.
  std::optional<std::string> name_of(ElfSymbols& symbols, uint64_t i) {
    auto name = symbols.function_at_file_offset(0x1000 + i * 16 + 4);
    return name ? std::optional<std::string>(*name) : std::nullopt;
  }

  fs::path path_;
  std::vector<fs::path> copies_;
  std::vector<std::pair<void*, size_t>> mapped_;
};

TEST_F(ElfSymbolsAttack, ThousandsOfSymbolsSharingOneLongNameCostAboutTheFile) {
  CraftedElf elf;  // 4000 symbols naming one 98,000-byte string: 392 MB when copied each
  size_t file_bytes = write(elf);
  ASSERT_LT(file_bytes, 200'000u);
  auto symbols = ElfSymbols::load(path_);
  ASSERT_TRUE(symbols) << symbols.error().message();
  EXPECT_EQ((*symbols)->size(), elf.symbols);
  EXPECT_LT((*symbols)->memory_bytes(), 2 * file_bytes);

  for (uint64_t i = 0; i < elf.symbols; ++i) {
    auto name = name_of(**symbols, i);
    ASSERT_TRUE(name) << i;
    ASSERT_EQ(*name, std::string(ElfSymbols::kMaxNameBytes, 'f')) << "cut at 4 KiB";
  }
  EXPECT_LT((*symbols)->memory_bytes(), 2 * file_bytes + 64 * 1024);
}

TEST_F(ElfSymbolsAttack, LookingUpThousandsOfDistinctLongNamesKeepsABoundedCache) {
  CraftedElf elf;
  elf.symbols = 10000;  // each names a different suffix: 10,000 distinct 4 KiB names, 41 MB
  elf.suffixes = true;
  size_t file_bytes = write(elf);
  auto symbols = ElfSymbols::load(path_);
  ASSERT_TRUE(symbols) << symbols.error().message();
  size_t peak = 0;
  for (uint64_t i = 0; i < elf.symbols; ++i) {
    auto name = name_of(**symbols, i);
    ASSERT_TRUE(name) << i;
    ASSERT_EQ(name->size(), ElfSymbols::kMaxNameBytes);
    peak = std::max(peak, (*symbols)->memory_bytes());
  }
  EXPECT_LT(peak, 2 * file_bytes + ElfSymbols::kMaxDemangledBytes + 64 * 1024 +
                      elf.symbols * 64 /* the cache's own nodes */);
  EXPECT_GT(elf.symbols * ElfSymbols::kMaxNameBytes, 2 * ElfSymbols::kMaxDemangledBytes)
      << "the attack must pass the bound to test it";
}

TEST_F(ElfSymbolsAttack, AnUnterminatedNameEndsWithItsStringTable) {
  CraftedElf elf;
  elf.symbols = 3;
  elf.name_bytes = 100;
  elf.unterminated = true;
  write(elf);
  auto symbols = ElfSymbols::load(path_);
  ASSERT_TRUE(symbols) << symbols.error().message();
  EXPECT_EQ(name_of(**symbols, 2), std::string(100, 'f'));
}

TEST_F(ElfSymbolsAttack, ATableClaimingMoreSymbolsThanTheBoundIsRefusedWhole) {
  CraftedElf elf;
  elf.symbols = 10;
  elf.claimed_symbols = ElfSymbols::kMaxSymbols;  // and the null symbol: one too many
  write(elf);
  auto symbols = ElfSymbols::load(path_);
  ASSERT_FALSE(symbols);
  EXPECT_NE(symbols.error().message().find("4194305 symbols, more than the 4194304"),
            std::string::npos)
      << symbols.error().message();
}

// A sparse file (no disk used) whose header claims ten million sections: libelf alone would
// allocate about 2.6 GB for them.
TEST_F(ElfSymbolsAttack, AHeaderClaimingMillionsOfSectionsIsRefusedBeforeLibelfSeesIt) {
  ASSERT_NO_FATAL_FAILURE(write_section_claim(10'000'000));
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  auto symbols = ElfSymbols::load(path_);
  ::getrusage(RUSAGE_SELF, &after);
  ASSERT_FALSE(symbols);
  EXPECT_NE(symbols.error().message().find("claims 10000000 sections"), std::string::npos)
      << symbols.error().message();
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB";
}

// Several crafted files mapped executable at once (here by this very process): the symbols the
// symbolizer keeps of all the files it read stay within its budget, the least recently used given
// up first. The bounded symbolizer reads what the process mapped before them first: files read
// together are read in the order of their device and inode, and a library read after the crafted
// files could take the whole budget (1 binary kept, every time in one fresh clone).
TEST_F(ElfSymbolsAttack, ManyCraftedFilesTogetherStayWithinTheSymbolizersBudget) {
  SymbolizerLimits limits;
  limits.max_binary_bytes = 3 * crafted_elf(CraftedElf{}).size();
  Symbolizer bounded(std::nullopt, limits);
  bounded.remember(::getpid(), 1, "test");
  ASSERT_NO_FATAL_FAILURE(map_copies(CraftedElf{}, 6));
  Symbolizer unbounded(std::nullopt);
  unbounded.remember(::getpid(), 1, "test");
  bounded.remember(::getpid(), 1, "test");

  EXPECT_GT(unbounded.binary_bytes(), limits.max_binary_bytes) << "the attack passes the budget";
  EXPECT_LE(bounded.binary_bytes(), limits.max_binary_bytes);
  EXPECT_GE(bounded.binaries(), 2u) << "files within the budget are kept";
  EXPECT_LT(bounded.binaries(), unbounded.binaries());
}

// What reading a file holds is asked for before it is taken: the heap's peak while a file is
// read stays within what was granted (libelf's headers, the names, the symbols and the sort's
// buffer), and a refused table is not read.
TEST_F(ElfSymbolsAttack, AFileIsReadWithinWhatItsReadingWasGranted) {
  CraftedElf elf;
  elf.symbols = 400'000;
  elf.name_bytes = 4 << 20;
  write(elf);
  size_t granted = 0;
  testing::MemoryMeter meter;
  {
    auto symbols = ElfSymbols::load(path_, {}, [&](size_t bytes) {
      granted += bytes;
      return true;
    });
    ASSERT_TRUE(symbols) << symbols.error().message();
    EXPECT_EQ((*symbols)->size(), elf.symbols);
    EXPECT_LE((*symbols)->memory_bytes(), granted);
  }
  std::printf("reading %u symbols with %u bytes of names: peak +%llu kB (%s), %zu kB granted\n",
              elf.symbols, elf.name_bytes, static_cast<unsigned long long>(meter.peak_growth_kb()),
              testing::MemoryMeter::measure(), granted >> 10);
  EXPECT_LE(meter.peak_growth_kb(), (granted >> 10) + 256) << "the chunks read at once aside";

  std::vector<size_t> asked;
  auto refused = ElfSymbols::load(path_, {}, [&](size_t bytes) {
    asked.push_back(bytes);
    return asked.size() == 1;  // the headers only
  });
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("more than the symbol cache can give"),
            std::string::npos)
      << refused.error().message();
  EXPECT_EQ(asked.size(), 2u);
}

// As many section headers as a file may have: what libelf holds for them is granted first.
TEST_F(ElfSymbolsAttack, TheMostSectionHeadersAFileMayHaveAreGrantedBeforeTheyAreRead) {
  const uint64_t sections = ElfSymbols::kMaxSections;
  ASSERT_NO_FATAL_FAILURE(write_section_claim(sections));
  size_t granted = 0;
  testing::MemoryMeter meter;
  auto symbols = ElfSymbols::load(path_, {}, [&](size_t bytes) {
    granted += bytes;
    return true;
  });
  std::printf("%llu section headers: peak +%llu kB (%s), %zu kB granted\n",
              static_cast<unsigned long long>(sections),
              static_cast<unsigned long long>(meter.peak_growth_kb()),
              testing::MemoryMeter::measure(), granted >> 10);
  EXPECT_LE(meter.peak_growth_kb(), (granted >> 10) + 256);
  EXPECT_FALSE(ElfSymbols::load(path_, {}, [](size_t) { return false; }));
}

// Four files whose symbol tables each take more than a third of the symbolizer's bound, mapped
// at once: what reading one holds counts with the symbols kept, so the heap's peak stays within
// the bound (it was the bound and a whole file's reading over: four 81 MB tables, +375 MB at the
// bound of 256 MB).
TEST_F(ElfSymbolsAttack, ReadingLargeSymbolTablesStaysWithinTheSymbolizersBound) {
  CraftedElf elf;
  elf.symbols = 500'000;  // 12 MB of entries
  elf.name_bytes = 8 << 20;
  SymbolizerLimits limits;
  limits.max_binary_bytes = 48 << 20;  // 20 MB kept of each file, 32 MB granted to read one
  ASSERT_NO_FATAL_FAILURE(map_copies(elf, 4));
  uint64_t peak_kb = 0;
  size_t kept = 0;
  {
    testing::MemoryMeter meter;
    Symbolizer symbolizer(std::nullopt, limits);
    symbolizer.remember(::getpid(), 1, "test");
    peak_kb = meter.peak_growth_kb();
    kept = symbolizer.binaries();
    EXPECT_LE(symbolizer.binary_bytes(), limits.max_binary_bytes);
  }
  std::printf("four 20 MB symbol tables read at a bound of %zu MB: peak +%llu kB (%s)\n",
              limits.max_binary_bytes >> 20, static_cast<unsigned long long>(peak_kb),
              testing::MemoryMeter::measure());
  EXPECT_GE(kept, 1u) << "a file within the bound is kept";
  EXPECT_LE(peak_kb, (limits.max_binary_bytes >> 10) + 1024) << "the symbolizer's own maps aside";
}

// Whether any offset of the file's first 64 KiB is named `function`.
bool names(ElfSymbols& symbols, std::string_view function) {
  for (uint64_t offset = 0; offset < (64 << 10); ++offset) {
    auto name = symbols.function_at_file_offset(offset);
    if (name && *name == function) return true;
  }
  return false;
}

TEST(DebugFiles, AStrippedProgramIsNamedFromTheDebugFileItsDebugLinkNames) {
  DebugFileSearch search{"/nonexistent/debug", SYMBOL_TARGET "_linked"};
  auto linked = ElfSymbols::load(SYMBOL_TARGET "_linked", search);
  ASSERT_TRUE(linked.ok()) << linked.error().message();
  EXPECT_EQ((*linked)->debug_file(), std::filesystem::path(SYMBOL_TARGET ".debug"));
  EXPECT_FALSE((*linked)->from_dynsym());
  EXPECT_TRUE(names(**linked, "program_work"));

  auto stripped = ElfSymbols::load(SYMBOL_TARGET "_stripped", {"/nonexistent/debug", ""});
  ASSERT_TRUE(stripped.ok()) << stripped.error().message();
  EXPECT_TRUE((*stripped)->debug_file().empty());
  EXPECT_FALSE(names(**stripped, "program_work")) << "a PIE exports none of its functions";
}

TEST(DebugFiles, AStrippedProgramIsNamedFromTheDebugFileOfItsBuildIdAndNoOtherBuilds) {
  auto stripped = ElfSymbols::load(SYMBOL_TARGET "_stripped", {"/nonexistent/debug", ""});
  ASSERT_TRUE(stripped.ok()) << stripped.error().message();
  const std::string id = (*stripped)->build_id();
  ASSERT_GT(id.size(), 4u);
  auto root = std::filesystem::temp_directory_path() / ("debug-root-" + std::to_string(::getpid()));
  auto place = root / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug");
  std::filesystem::create_directories(place.parent_path());

  std::filesystem::copy_file(NO_FRAME_POINTERS, place);  // another build's symbols
  auto other = ElfSymbols::load(SYMBOL_TARGET "_stripped", {root, ""});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE((*other)->debug_file().empty()) << "its build id is not the program's";

  std::filesystem::copy_file(SYMBOL_TARGET ".debug", place,
                             std::filesystem::copy_options::overwrite_existing);
  auto found = ElfSymbols::load(SYMBOL_TARGET "_stripped", {root, ""});
  std::filesystem::remove_all(root);
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ((*found)->debug_file(), place);
  EXPECT_TRUE(names(**found, "program_work"));
}

TEST(DebugFiles, AStrippedProgramIsNamedFromItsMiniDebugInfo) {
  auto mini = ElfSymbols::load(SYMBOL_TARGET "_minidebug", {"/nonexistent/debug", ""});
  ASSERT_TRUE(mini.ok()) << mini.error().message();
  EXPECT_TRUE((*mini)->with_mini_debug_info());
  EXPECT_TRUE(names(**mini, "program_work"));
  EXPECT_TRUE((*mini)->from_dynsym()) << ".dynsym's functions stay";
}

TEST(DebugFiles, XzDataThatInflatesPastItsBoundIsRefused) {
  std::string zeros(1 << 20, '\0');
  auto compressed = run_command({"sh", "-c", "head -c 1048576 /dev/zero | xz -c"},
                                deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(compressed.ok());
  std::string& text = compressed->stdout_text;
  ASSERT_TRUE(text.ends_with("YZ\n")) << "run_command ends the last line";
  text.pop_back();
  std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  auto whole = xz_decompress(data, 2 << 20);
  ASSERT_TRUE(whole.ok()) << whole.error().message();
  EXPECT_EQ(*whole, zeros);
  auto bounded = xz_decompress(data, 64 << 10);
  ASSERT_FALSE(bounded.ok());
  EXPECT_NE(bounded.error().message().find("inflates past"), std::string::npos);
  EXPECT_FALSE(xz_decompress(data.subspan(0, data.size() / 2), 2 << 20).ok()) << "cut short";

  auto declared = xz_declared_size(data);
  ASSERT_TRUE(declared.ok()) << declared.error().message();
  EXPECT_EQ(*declared, zeros.size()) << "known before it is decompressed";
  EXPECT_FALSE(xz_declared_size(data.subspan(0, data.size() - 1)).ok()) << "cut short";
}

// A mangled name whose template arguments each repeat the one before twice (S1_, S2_, …): at 20
// levels (234 bytes) __cxa_demangle makes 27 MB of it in half a second; here there are 34.
TEST(DemangleAttack, ANameThatDemanglesToGigabytesIsCutAt4KiB) {
  std::string name = "_Z1g1A1BIS_S_E";
  for (int level = 1; level <= 34; ++level) {  // S1_ … SY_, in base 36
    std::string previous =
        "S" + std::string(1, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[level]) + "_";
    name += "S0_I" + previous + previous + "E";
  }
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  std::string readable = demangle(name);
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(readable.size(), kMaxDemangledName);
  EXPECT_TRUE(readable.starts_with("g(A, B<A, A>, B<B<A, A>, B<A, A> >")) << readable.substr(0, 80);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 16 * 1024) << "KiB";

  EXPECT_EQ(demangle("_Z11alphaKernelPf"), "alphaKernel(float*)");
  EXPECT_EQ(demangle("_Znot a name"), "_Znot a name");
  EXPECT_EQ(demangle("main"), "main");
}

}  // namespace
}  // namespace dormant::profilers::system
