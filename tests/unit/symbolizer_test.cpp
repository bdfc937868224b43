#include "profilers/system/symbolizer.h"

#include <filesystem>
#include <fstream>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include "common/subprocess.h"
#include "profilers/system/elf_symbols.h"
#include "profilers/system/kernel_symbols.h"
#include "profilers/system/process_maps.h"

namespace dormant::profilers::system {
namespace {

namespace symbols_test {
[[gnu::noinline]] int a_function_of_this_test(int x) { return x * 3 + 1; }
}  // namespace symbols_test

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() /
              ("dormant-symbolizer-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path) << text;
  return path;
}

TEST(ProcessMaps, ParsesExecutableMappingsAndSkipsTheRest) {
  auto mapping = parse_maps_line(
      "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234567                    /usr/bin/x y");
  ASSERT_TRUE(mapping);
  EXPECT_EQ(mapping->start, 0x55d0c0a00000u);
  EXPECT_EQ(mapping->end, 0x55d0c0a21000u);
  EXPECT_EQ(mapping->offset, 0x2000u);
  EXPECT_EQ(mapping->device, (0xfdull << 32) | 1);
  EXPECT_EQ(mapping->inode, 1234567u);
  EXPECT_EQ(mapping->path, "/usr/bin/x y");
  EXPECT_TRUE(mapping->is_file());

  auto vdso = parse_maps_line("7ffd5a5f0000-7ffd5a5f2000 r-xp 00000000 00:00 0  [vdso]");
  ASSERT_TRUE(vdso);
  EXPECT_FALSE(vdso->is_file());
  EXPECT_FALSE(parse_maps_line("7ffd5a5f0000-7ffd5a5f2000 rw-p 00000000 00:00 0  [stack]"));
  EXPECT_FALSE(parse_maps_line("not a maps line"));
  EXPECT_FALSE(parse_maps_line("2000-1000 r-xp 00000000 00:00 0"));
  EXPECT_FALSE(parse_maps_line("1000-2000 r-xp zz 00:00 0 /x"));
}

TEST(KernelSymbols, FindsTheFunctionHoldingAnAddressAndSkipsData) {
  auto path = write_temp("kallsyms",
                         "ffffffff81000000 T _stext\n"
                         "ffffffff81000100 t do_thing\n"
                         "ffffffff81000180 D some_data\n"
                         "ffffffff81000200 T other_thing\n"
                         "ffffffffc0001000 t module_fn\t[some_module]\n"
                         "garbage line\n");
  auto symbols = KernelSymbols::load(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message();
  EXPECT_EQ(symbols->size(), 4u);
  EXPECT_EQ(symbols->function_at(0xffffffff81000150), "do_thing");
  EXPECT_EQ(symbols->function_at(0xffffffff81000190), "do_thing") << "data is not a function";
  EXPECT_EQ(symbols->function_at(0xffffffffc0001004), "module_fn");
  EXPECT_FALSE(symbols->function_at(0x1000));
}

TEST(KernelSymbols, HiddenAddressesAreUnavailableNotWrong) {
  auto path = write_temp("kallsyms-hidden", "0000000000000000 T _stext\n0000000000000000 t x\n");
  auto symbols = KernelSymbols::load(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(symbols.ok());
  EXPECT_EQ(symbols.error().kind(), ErrorKind::kUnavailable);
  EXPECT_NE(symbols.error().message().find("kptr_restrict"), std::string::npos);
}

// The file offset /proc/self/maps gives for an address of this process.
std::pair<std::string, uint64_t> file_offset_of(const void* address) {
  auto mappings = executable_mappings(::getpid());
  auto value = reinterpret_cast<uint64_t>(address);
  for (const Mapping& mapping : *mappings) {
    if (value >= mapping.start && value < mapping.end) {
      return {mapping.path, value - mapping.start + mapping.offset};
    }
  }
  return {"", 0};
}

TEST(ElfSymbols, NamesAFunctionOfThisPieProgramDemangled) {
  auto [path, offset] =
      file_offset_of(reinterpret_cast<const void*>(&symbols_test::a_function_of_this_test));
  ASSERT_FALSE(path.empty());
  auto symbols = ElfSymbols::load(path);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message();
  EXPECT_FALSE((*symbols)->from_dynsym());
  EXPECT_EQ((*symbols)->function_at_file_offset(offset + 1),
            "dormant::profilers::system::(anonymous namespace)::symbols_test::"
            "a_function_of_this_test(int)");
  EXPECT_FALSE((*symbols)->build_id().empty());
}

TEST(ElfSymbols, NamesAFunctionOfASharedLibraryFromItsDynamicSymbols) {
  auto [path, offset] = file_offset_of(reinterpret_cast<const void*>(&zlibVersion));
  ASSERT_NE(path.find("libz"), std::string::npos) << path;
  auto symbols = ElfSymbols::load(path);
  ASSERT_TRUE(symbols.ok()) << symbols.error().message();
  EXPECT_EQ((*symbols)->function_at_file_offset(offset), "zlibVersion");
}

TEST(ElfSymbols, AFileThatIsNotElfIsAParseError) {
  auto path = write_temp("not-elf", "#!/bin/sh\necho hi\n");
  auto symbols = ElfSymbols::load(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(symbols.ok());
  EXPECT_EQ(symbols.error().kind(), ErrorKind::kParse);
}

TEST(Symbolizer, NamesFramesOfThisProcessRootFirst) {
  if (::geteuid() != 0) GTEST_SKIP() << "reading /proc/PID/map_files needs CAP_SYS_ADMIN";
  Symbolizer symbolizer(std::nullopt);
  symbolizer.remember(::getpid(), 1, "me");
  EXPECT_EQ(symbolizer.comm(::getpid(), 1), "me");
  uint64_t leaf = reinterpret_cast<uint64_t>(&symbols_test::a_function_of_this_test);
  uint64_t caller = reinterpret_cast<uint64_t>(&zlibVersion) + 1;  // a return address
  std::vector<uint64_t> stack = {leaf, caller, 0x10};              // innermost first
  std::vector<std::string> frames;
  symbolizer.append_user_frames(::getpid(), 1, stack, frames);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], "[unknown]");
  EXPECT_EQ(frames[1], "zlibVersion");
  EXPECT_NE(frames[2].find("a_function_of_this_test"), std::string::npos);

  frames.clear();
  std::vector<uint64_t> kernel = {0xffffffff81000000};
  symbolizer.append_kernel_frames(kernel, frames);
  EXPECT_EQ(frames, std::vector<std::string>{"(kernel.kallsyms)"}) << "no kernel symbols given";
  EXPECT_EQ(symbolizer.comm(0, 0), "swapper");
}

// A library loaded after the image's maps were read (dlopen) is found: a frame outside every
// known mapping has them read again.
TEST(Symbolizer, ALibraryLoadedAfterTheMapsWereReadIsFoundByReadingThemAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "reading /proc/PID/map_files needs CAP_SYS_ADMIN";
  std::ifstream comm_file("/proc/self/comm");
  std::string comm;
  std::getline(comm_file, comm);
  Symbolizer symbolizer(std::nullopt);
  symbolizer.remember(::getpid(), 1, comm);
  void* library = ::dlopen(SYMBOL_TARGET_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  std::vector<uint64_t> stack = {reinterpret_cast<uint64_t>(::dlsym(library, "library_work"))};
  std::vector<std::string> frames;
  symbolizer.append_user_frames(::getpid(), 1, stack, frames);
  ::dlclose(library);
  EXPECT_EQ(frames, std::vector<std::string>{"library_work"});
}

// The binaries this process maps, as the symbolizer counts them.
size_t binaries_of_this_process() {
  Symbolizer counting(std::nullopt);
  counting.remember(::getpid(), 1, "me");
  return counting.binaries();
}

// The binary cache is bounded and gives up the binary least recently used, not the one read
// first: here this test program, read first and used since to name a frame.
TEST(Symbolizer, AFullBinaryCacheGivesUpTheLeastRecentlyUsed) {
  if (::geteuid() != 0) GTEST_SKIP() << "reading /proc/PID/map_files needs CAP_SYS_ADMIN";
  size_t mapped = binaries_of_this_process();
  ASSERT_GE(mapped, 3u) << "this program, libc and zlib at least";
  Symbolizer symbolizer(std::nullopt, SymbolizerLimits{.max_binaries = mapped});
  symbolizer.remember(::getpid(), 1, "me");
  uint64_t own = reinterpret_cast<uint64_t>(&symbols_test::a_function_of_this_test);
  std::vector<std::string> frames;
  symbolizer.append_user_frames(::getpid(), 1, std::vector<uint64_t>{own}, frames);
  ASSERT_EQ(frames.size(), 1u);
  ASSERT_NE(frames[0].find("a_function_of_this_test"), std::string::npos) << frames[0];

  SpawnOptions sleep;
  sleep.argv = {"sleep", "30"};
  auto other = Subprocess::spawn(sleep);
  ASSERT_TRUE(other.ok()) << other.error().message();
  symbolizer.remember((*other)->pid(), 1, "sleep");  // sleep's own binary is one more
  (void)(*other)->terminate(std::chrono::seconds(1));
  EXPECT_EQ(symbolizer.binaries_read(), mapped + 1) << "sleep's own binary";
  EXPECT_EQ(symbolizer.binaries(), mapped) << "the cache stays within its bound";
  frames.clear();
  symbolizer.append_user_frames(::getpid(), 1, std::vector<uint64_t>{own}, frames);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].find("a_function_of_this_test"), std::string::npos)
      << "this program, used since it was read, was given up: " << frames[0];
}

// A process that maps more binaries than the cache holds has each read once: one is given up for
// the one too many, and not read again in turn.
TEST(Symbolizer, AProcessMappingMoreBinariesThanTheCacheHoldsHasEachReadOnce) {
  if (::geteuid() != 0) GTEST_SKIP() << "reading /proc/PID/map_files needs CAP_SYS_ADMIN";
  size_t mapped = binaries_of_this_process();
  Symbolizer symbolizer(std::nullopt, SymbolizerLimits{.max_binaries = mapped});
  symbolizer.remember(::getpid(), 1, "me");
  ASSERT_EQ(symbolizer.binaries_read(), mapped);
  // This program is used since it was read: the oldest in the cache is then a library, which a
  // loop reading the binaries in turn could come to after the new one, give up, and read again.
  uint64_t own = reinterpret_cast<uint64_t>(&symbols_test::a_function_of_this_test);
  std::vector<std::string> frames;
  symbolizer.append_user_frames(::getpid(), 1, std::vector<uint64_t>{own}, frames);
  void* library = ::dlopen(SYMBOL_TARGET_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  symbolizer.remember(::getpid(), 1, "me");
  ::dlclose(library);
  EXPECT_EQ(symbolizer.binaries_read(), mapped + 1) << "the library, and nothing read twice";
  EXPECT_EQ(symbolizer.binaries(), mapped);
}

TEST(Symbolizer, AnImageNeverAnnouncedIsReadWhenFirstNamed) {
  Symbolizer symbolizer(std::nullopt);
  std::ifstream comm_file("/proc/self/comm");
  std::string comm;
  std::getline(comm_file, comm);
  EXPECT_EQ(symbolizer.comm(::getpid(), 7), comm);
  EXPECT_EQ(symbolizer.images(), 1u);
  EXPECT_TRUE(symbolizer.forget_exited().empty()) << "this process runs";
}

}  // namespace
}  // namespace dormant::profilers::system
