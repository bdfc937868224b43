// The profiler module is loaded for sessions and really gone after them; a module that cannot
// be used is refused with the loader's own words. This program links no profiler code, as the
// agent does not, so that what /proc/self/maps shows is the module's doing.
#include "agent/module_loader.h"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/procfs.h"

namespace dormant::agent {
namespace {

bool mapped(const std::string& name) {
  auto files = procfs::mapped_files();
  EXPECT_TRUE(files.ok());
  return std::any_of(files->begin(), files->end(),
                     [&](const std::string& file) { return file.find(name) != std::string::npos; });
}

TEST(ModuleLoader, TheModuleAndItsLibrariesLeaveTheProcessWhenTheLastSessionLetsGo) {
  ASSERT_FALSE(mapped("libdormant_profilers.so"));
  ASSERT_FALSE(mapped("libelf")) << "this test must not link the profilers";
  auto files_before = procfs::mapped_files();
  ASSERT_TRUE(files_before.ok());
  ModuleLoader loader(PROFILER_MODULE);
  {
    auto first = loader.acquire();
    ASSERT_TRUE(first.ok()) << first.error().message();
    auto second = loader.acquire();
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(first->get(), second->get()) << "two sessions share one module";
    EXPECT_TRUE(mapped("libdormant_profilers.so"));
    EXPECT_TRUE(mapped("libelf"));
#if DORMANT_WITH_EBPF
    EXPECT_TRUE(mapped("libbpf"));
#endif
    ProfilingSettings settings;
    settings.cpu = CpuProfilers::kNone;
    auto session = (*first)->profilers().start_session(settings, module::ProfileFacts{});
    EXPECT_FALSE(session->any_running());
    auto snapshot = session->snapshot({});
    EXPECT_EQ(snapshot->samples(), 0u);
    EXPECT_NE(snapshot->collapsed().find("\"metadata\""), std::string::npos);
    EXPECT_TRUE(session->stop().problems.empty());
  }
  auto files_after = procfs::mapped_files();
  ASSERT_TRUE(files_after.ok());
  EXPECT_EQ(*files_after, *files_before) << "the module or a library it brought stayed mapped";
  // And it loads again for the next session.
  auto again = loader.acquire();
  ASSERT_TRUE(again.ok()) << again.error().message();
}

TEST(ModuleLoader, AMissingModuleIsRefusedWithTheLoadersMessage) {
  auto loaded = LoadedModule::load("/nonexistent/libdormant_profilers.so");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find("cannot open shared object file"), std::string::npos)
      << loaded.error().message();
  EXPECT_NE(loaded.error().message().find("/nonexistent/libdormant_profilers.so"),
            std::string::npos);
}

TEST(ModuleLoader, AModuleNeedingALibraryThatIsNotThereIsRefusedNamingIt) {
  auto loaded = LoadedModule::load(MODULE_MISSING_DEPENDENCY);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find("libunreachable_dependency.so"), std::string::npos)
      << loaded.error().message();
}

TEST(ModuleLoader, AModuleFromAnotherBuildIsRefusedAndUnloaded) {
  auto loaded = LoadedModule::load(FOREIGN_MODULE);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find("from another build"), std::string::npos)
      << loaded.error().message();
  EXPECT_FALSE(mapped("foreign_module"));
}

TEST(ModuleLoader, AModuleOthersMayChangeIsRefusedBeforeItIsLoaded) {
  namespace fs = std::filesystem;
  fs::path copy = fs::temp_directory_path() / ("dormant-module-" + std::to_string(::getpid()));
  fs::copy_file(PROFILER_MODULE, copy, fs::copy_options::overwrite_existing);
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_all | fs::perms::others_all);
  auto loaded = LoadedModule::load(copy);
  EXPECT_FALSE(loaded.ok());
  if (!loaded.ok()) {
    EXPECT_NE(loaded.error().message().find("another user or group may change it"),
              std::string::npos)
        << loaded.error().message();
  }
  EXPECT_FALSE(mapped(copy.filename().string()));
  fs::remove(copy);
}

TEST(ModuleLoader, AFileThatIsNoLibraryIsRefused) {
  auto loaded = LoadedModule::load(THIS_PROGRAM_SOURCE);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find("cannot load the profiler module"), std::string::npos);
}

}  // namespace
}  // namespace dormant::agent
