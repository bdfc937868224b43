// The arrows of docs/architecture.md, checked on every #include "..." of the sources: a file may
// include its own folder and the folders its folder points at, nothing else. A failure names the
// file, the line and the arrow that does not exist.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// Layer → what it may include (prefixes of include paths). A layer is the longest folder prefix
// of a file found here.
const std::map<std::string, std::vector<std::string>>& arrows() {
  static const std::map<std::string, std::vector<std::string>> kArrows = {
      {"common", {"common/"}},
      {"config", {"config/", "common/"}},
      {"profile", {"profile/", "common/", "pprof/profile.pb.h"}},
      // The wire protocol, shared by the agent and the server.
      {"wire", {"wire/", "common/"}},
      // The agent's client of it.
      {"heartbeat", {"heartbeat/", "wire/", "common/"}},
      // What runs where (containers, pods, workloads): the idle agent's inventory and the
      // profilers' container frames.
      {"inventory", {"inventory/", "common/"}},
      {"profilers",
       {"profilers/", "inventory/", "profile/", "common/", "bpf/", "dormant_cupti/",
        "cpu_sampler.skel.h", "gpu_probes.skel.h"}},
      // The injection library runs inside other people's programs: its wire format, and the
      // CPython layouts it walks the launching thread's frames with; nothing else.
      {"cupti_lib", {"cupti_lib/", "dormant_cupti/", "profilers/system/python_layouts.h"}},
      // The interface between the agent and its profiler module: a leaf but for common/.
      {"module/api", {"module/api/", "common/"}},
      {"module", {"module/", "profilers/", "profile/", "common/"}},
      // The idle agent never includes the profilers: it loads them through module/api.
      {"agent",
       {"agent/", "module/api/", "heartbeat/", "wire/", "inventory/", "config/", "common/"}},
      // The server shares the wire protocol with the agent, not the agent's client. Its layers:
      // http -> api -> control -> storage; main.cpp wires them together.
      {"server", {"server/", "wire/", "profile/", "config/", "common/"}},
      {"server/http", {"server/http/", "common/"}},
      {"server/storage", {"server/storage/", "common/"}},
      // The rules, free of SQL: the store's values and operations, not its rows or databases.
      {"server/control",
       {"server/control/", "server/storage/store.h", "server/storage/records.h",
        "server/storage/combined_config.h", "common/"}},
      {"server/api",
       {"server/api/", "server/control/", "server/storage/", "server/http/", "wire/", "profile/",
        "common/"}},
  };
  return kArrows;
}

std::string layer_of(const std::string& relative) {
  std::string best;
  for (const auto& [layer, allowed] : arrows()) {
    if (relative.starts_with(layer + "/") && layer.size() > best.size()) best = layer;
  }
  return best;
}

struct Violation {
  std::string where;  // file:line
  std::string text;
};

std::vector<Violation> violations_in(const fs::path& root) {
  std::vector<Violation> found;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    auto extension = entry.path().extension();
    if (!entry.is_regular_file() || (extension != ".h" && extension != ".cpp")) continue;
    std::string relative = fs::relative(entry.path(), root).string();
    std::string layer = layer_of(relative);
    if (layer.empty()) continue;  // tests, scripts, fakes: they may use anything
    const auto& allowed = arrows().at(layer);
    std::ifstream file(entry.path());
    std::string line;
    for (int number = 1; std::getline(file, line); ++number) {
      constexpr std::string_view kInclude = "#include \"";
      if (!line.starts_with(kInclude)) continue;
      std::string target =
          line.substr(kInclude.size(), line.find('"', kInclude.size()) - kInclude.size());
      bool ok = std::any_of(allowed.begin(), allowed.end(),
                            [&](const std::string& prefix) { return target.starts_with(prefix); });
      if (!ok) found.push_back({relative + ":" + std::to_string(number), layer + " → " + target});
    }
  }
  return found;
}

TEST(IncludeLayers, EveryIncludeFollowsAnArrow) {
  auto found = violations_in(SOURCE_ROOT);
  for (const auto& violation : found) {
    ADD_FAILURE() << violation.where << ": " << violation.text << " is not an allowed arrow";
  }
}

TEST(IncludeLayers, TheServersRulesReachNoDatabase) {
  fs::path root = fs::temp_directory_path() / ("dormant-layers-" + std::to_string(::getpid()));
  fs::create_directories(root / "server" / "control");
  fs::create_directories(root / "server" / "storage");
  std::ofstream(root / "server" / "control" / "rule.cpp")
      << "#include \"server/storage/store.h\"\n"
      << "#include \"server/storage/sqlite_database.h\"\n";
  std::ofstream(root / "server" / "storage" / "rows.cpp")
      << "#include \"server/control/commands.h\"\n";
  auto found = violations_in(root);
  fs::remove_all(root);
  std::sort(found.begin(), found.end(),
            [](const Violation& a, const Violation& b) { return a.where < b.where; });
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].where, "server/control/rule.cpp:2");
  EXPECT_EQ(found[0].text, "server/control → server/storage/sqlite_database.h");
  EXPECT_EQ(found[1].where, "server/storage/rows.cpp:1");
  EXPECT_EQ(found[1].text, "server/storage → server/control/commands.h");
}

TEST(IncludeLayers, AForbiddenIncludeIsFoundAndNamed) {
  fs::path root = fs::temp_directory_path() / ("dormant-layers-" + std::to_string(::getpid()));
  fs::create_directories(root / "agent");
  std::ofstream(root / "agent" / "sneaky.cpp") << "#include \"agent/supervisor.h\"\n"
                                               << "#include \"profilers/perf/perf_profiler.h\"\n";
  auto found = violations_in(root);
  fs::remove_all(root);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].where, "agent/sneaky.cpp:2");
  EXPECT_EQ(found[0].text, "agent → profilers/perf/perf_profiler.h");
}

}  // namespace
