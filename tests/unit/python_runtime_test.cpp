// What the Python walk knows of CPython: each version's offsets against the headers of an
// installed CPython of that version (Debian's 3.11 always; pyenv's 3.9 to 3.13 where present),
// 3.13's own debug offsets read as the sampler reads them, interpreters read from their files,
// and Python frames put where their evaluation loops' native frames were.
#include "profilers/system/python_runtime.h"

#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/deadline.h"
#include "common/subprocess.h"
#include "profilers/system/python_frames.h"

namespace dormant::profilers::system {
namespace {

struct ProbedPython {
  std::string interpreter;
  std::map<std::string, int> offsets;  // as the probe names them, with "minor"
};

// What each offsets probe built here prints: one per installed CPython with headers.
std::vector<ProbedPython> probe_installed_pythons() {
  std::vector<ProbedPython> probed;
  std::istringstream probes(PYTHON_OFFSETS_PROBES);
  std::string probe;
  while (std::getline(probes, probe, ':')) {
    if (probe.empty()) continue;
    auto output = run_command({probe}, deadline_after(std::chrono::seconds(30)));
    EXPECT_TRUE(output.ok()) << probe << ": " << output.error().message();
    if (!output.ok()) continue;
    ProbedPython python;
    std::istringstream lines(output->stdout_text);
    std::string name, value;
    while (lines >> name >> value) {
      if (name == "interpreter") {
        python.interpreter = value;
      } else {
        python.offsets[name] = std::stoi(value);
      }
    }
    probed.push_back(std::move(python));
  }
  return probed;
}

std::map<std::string, int> named(const PythonOffsets& offsets, int minor) {
  std::map<std::string, int> named = {
      {"minor", minor},
      {"runtime_interpreters_head", offsets.runtime_interpreters_head},
      {"interpreter_threads_head", offsets.interpreter_threads_head},
      {"thread_next", offsets.thread_next},
      {"thread_pthread", offsets.thread_pthread},
      {"thread_frame", offsets.thread_frame},
      {"cframe_current_frame", offsets.cframe_current_frame},
      {"frame_code", offsets.frame_code},
      {"frame_previous", offsets.frame_previous},
      {"frame_instruction", offsets.frame_instruction},
      {"frame_is_entry", offsets.frame_is_entry},
      {"frame_owner", offsets.frame_owner},
      {"every_frame_is_entry", offsets.every_frame_is_entry},
      {"object_type", offsets.object_type},
      {"code_filename", offsets.code_filename},
      {"code_name", offsets.code_name},
      {"code_qualname", offsets.code_qualname},
      {"code_first_line", offsets.code_first_line},
      {"unicode_length", offsets.unicode_length},
      {"unicode_state", offsets.unicode_state},
      {"unicode_ascii_data", offsets.unicode_ascii_data},
      {"unicode_compact_data", offsets.unicode_compact_data},
  };
  if (offsets.frame_owner >= 0) named["owned_by_c_stack"] = offsets.owned_by_c_stack;
  return named;
}

// The file holding an interpreter's runtime: its libpython where it has one, else itself.
std::filesystem::path runtime_file_of(const std::filesystem::path& interpreter) {
  auto library = interpreter.parent_path().parent_path() / "lib" /
                 ("lib" + interpreter.filename().string() + ".so.1.0");
  return std::filesystem::exists(library) ? library : interpreter;
}

TEST(PythonRuntimeTest, EachInstalledVersionsLayoutIsThatOfItsOwnHeaders) {
  auto probed = probe_installed_pythons();
  bool debians = false;
  for (const ProbedPython& python : probed) {
    int minor = python.offsets.at("minor");
    debians |= python.interpreter == "/usr/bin/python3.11";
    auto file = runtime_file_of(python.interpreter);
    auto binary = PythonBinary::read(file, file.string());
    ASSERT_TRUE(binary.ok()) << binary.error().message();
    EXPECT_EQ(binary->minor(), minor) << file;
    ASSERT_NE(binary->offsets(), nullptr) << binary->layout_error();
    EXPECT_EQ(named(*binary->offsets(), minor), python.offsets) << file;
    if (minor == 13) {
      EXPECT_EQ(python_offsets(13), nullptr) << "3.13's come from its _Py_DebugOffsets";
    } else {
      ASSERT_NE(python_offsets(minor), nullptr);
      EXPECT_EQ(named(*python_offsets(minor), minor), python.offsets) << file;
    }
    std::cout << "checked 3." << minor << ": " << file << "\n";
  }
  EXPECT_TRUE(debians) << "python3.11-dev's headers are installed by scripts/install-deps";
}

// A 3.13 _Py_DebugOffsets up to the members the walk reads (71 words): every structure 4096
// bytes, every offset 8.
std::vector<uint64_t> plausible_debug_offsets() {
  std::vector<uint64_t> words(71, 8);
  std::memcpy(&words[0], "xdebugpy", 8);
  words[1] = 0x030d00f0;  // 3.13.0 final
  words[2] = 0;           // with the GIL
  for (size_t size : {3, 6, 19, 28, 34, 44, 46, 50, 53, 56, 59, 61, 64, 67}) {
    words[size] = 4096;
  }
  return words;
}

// The offsets, or what is wrong with them.
std::pair<std::optional<PythonOffsets>, std::string> from_debug(
    const std::vector<uint64_t>& words) {
  std::string problem;
  auto offsets = python313_offsets_from_debug(
      {reinterpret_cast<const uint8_t*>(words.data()), words.size() * sizeof(uint64_t)}, problem);
  return {offsets, problem};
}

TEST(PythonRuntimeTest, DebugOffsetsThatAreNotA313sOrDoNotFitAreRefused) {
  auto [plausible, problem] = from_debug(plausible_debug_offsets());
  ASSERT_TRUE(plausible) << problem;
  EXPECT_EQ(plausible->thread_frame, 8);
  EXPECT_EQ(plausible->unicode_compact_data, 24);
  EXPECT_EQ(plausible->cframe_current_frame, -1);
  auto refusal = [](std::vector<uint64_t> words) {
    auto [offsets, problem] = from_debug(words);
    return offsets ? std::string("accepted") : problem;
  };
  auto words = plausible_debug_offsets();
  words.pop_back();
  EXPECT_NE(refusal(words).find("cut short"), std::string::npos);
  words = plausible_debug_offsets();
  words[0] = 0;
  EXPECT_NE(refusal(words).find("cookie"), std::string::npos);
  words = plausible_debug_offsets();
  words[1] = 0x030e00f0;
  EXPECT_NE(refusal(words).find("not 3.13"), std::string::npos);
  words = plausible_debug_offsets();
  words[2] = 1;
  EXPECT_NE(refusal(words).find("free-threaded"), std::string::npos);
  words = plausible_debug_offsets();
  words[23] = 4093;  // thread_state.current_frame: its 8 bytes past the structure's end
  EXPECT_NE(refusal(words).find("thread_state.current_frame"), std::string::npos);
  words = plausible_debug_offsets();
  words[19] = 1ULL << 40;
  words[23] = 1ULL << 20;  // within its structure, beyond the sampler's 16 bits
  EXPECT_NE(refusal(words).find("thread_state.current_frame"), std::string::npos);
}

TEST(PythonRuntimeTest, VersionsWithoutALayoutHaveNone) {
  EXPECT_EQ(python_offsets(8), nullptr);
  EXPECT_EQ(python_offsets(14), nullptr);
  EXPECT_EQ(python_offsets(99), nullptr);
}

TEST(PythonRuntimeTest, InterpretersAreKnownByTheirFileNames) {
  for (const char* name : {"/usr/bin/python3.11", "/opt/py/bin/python3.12d",
                           "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", "libpython3.9.so"}) {
    EXPECT_TRUE(PythonBinary::named_like_python(name)) << name;
  }
  for (const char* name : {"/usr/bin/python3", "/usr/bin/python3.11-config", "/usr/bin/perl",
                           "/usr/lib/python3.11/lib-dynload/_ssl.so", "python3.x"}) {
    EXPECT_FALSE(PythonBinary::named_like_python(name)) << name;
  }
}

TEST(PythonRuntimeTest, DebiansInterpreterSaysItsVersionAndWhereItsRuntimeIs) {
  auto python = PythonBinary::read("/usr/bin/python3.11", "/usr/bin/python3.11");
  ASSERT_TRUE(python.ok()) << python.error().message();
  EXPECT_EQ(python->minor(), 11);
  EXPECT_NE(python->runtime_address(), 0u);
  EXPECT_NE(python->code_type_address(), 0u);
  EXPECT_FALSE(PythonBinary::read("/bin/true", "/bin/true").ok()) << "no _PyRuntime";
}

std::vector<std::string> frames_after_merge(std::vector<std::string> frames,
                                            std::vector<std::vector<std::string>> groups) {
  size_t end = merge_python_frames(frames, 1, frames.size() - 1, std::move(groups));
  EXPECT_EQ(frames.back(), "kernel_[k]");
  frames.resize(end);
  return frames;
}

TEST(PythonRuntimeTest, EachEvaluationLoopGetsItsOwnPythonFramesInOrder) {
  // Root first; the kernel frame at the end and a marker at the start are not user frames.
  std::vector<std::string> native = {"[marker]",
                                     "main",
                                     "_PyEval_EvalFrameDefault",
                                     "builtin_sorted",
                                     "_PyEval_EvalFrameDefault",
                                     "leaf",
                                     "kernel_[k]"};
  auto merged = frames_after_merge(native, {{"key_[p]", "spin_[p]"}, {"<module>_[p]", "run_[p]"}});
  EXPECT_EQ(merged,
            (std::vector<std::string>{"[marker]", "main_[pn]", "<module>_[p]", "run_[p]",
                                      "builtin_sorted_[pn]", "key_[p]", "spin_[p]", "leaf_[pn]"}));
}

TEST(PythonRuntimeTest, PythonFramesWhoseLoopWasNotFoundGoRootMost) {
  std::vector<std::string> native = {"[marker]", "_PyEval_EvalFrameDefault", "leaf", "kernel_[k]"};
  auto merged = frames_after_merge(native, {{"inner_[p]"}, {"outer_[p]"}});
  EXPECT_EQ(merged, (std::vector<std::string>{"[marker]", "outer_[p]", "inner_[p]", "leaf_[pn]"}));
  auto without_loops =
      frames_after_merge({"[marker]", "leaf", "kernel_[k]"}, {{"inner_[p]"}, {"outer_[p]"}});
  EXPECT_EQ(without_loops,
            (std::vector<std::string>{"[marker]", "outer_[p]", "inner_[p]", "leaf_[pn]"}));
}

TEST(PythonRuntimeTest, FramesOfAProcessThatIsGoneAreUnknownNotGuessed) {
  const PythonOffsets* offsets = python_offsets(11);
  ASSERT_NE(offsets, nullptr);
  PythonFrameNames names;
  // An address no process has: read fails, so the frame says it is unknown.
  uint64_t frames[] = {0x10 | 1, 0, 0x20, 0};
  auto groups = names.groups(999999, *offsets, 0x1234, frames);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], std::vector<std::string>{"[unknown Python frame]_[p]"});
  names.end_snapshot({999999});
  EXPECT_EQ(names.size(), 0u);
}

// A 3.11 code object and its two strings, laid out in this process's memory as CPython lays
// them out, for the names to be read from with process_vm_readv.
struct FakeCode {
  static constexpr uint64_t kCodeType = 0xc0de;
  alignas(8) uint8_t code[256] = {};
  alignas(8) uint8_t function[128] = {};
  alignas(8) uint8_t file[128] = {};

  static void set_string(uint8_t* object, const std::string& text) {
    int64_t length = static_cast<int64_t>(text.size());
    uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);  // kind 1, compact, ascii
    std::memcpy(object + 16, &length, sizeof(length));
    std::memcpy(object + 32, &state, sizeof(state));
    std::memcpy(object + 48, text.data(), text.size());
  }
  void become(uint64_t type, const std::string& name, int32_t line) {
    const PythonOffsets& layout = *python_offsets(11);
    auto function_address = reinterpret_cast<uint64_t>(function);
    auto file_address = reinterpret_cast<uint64_t>(file);
    std::memcpy(code + layout.object_type, &type, 8);
    std::memcpy(code + layout.code_qualname, &function_address, 8);
    std::memcpy(code + layout.code_filename, &file_address, 8);
    std::memcpy(code + layout.code_first_line, &line, 4);
    set_string(function, name);
    set_string(file, "a.py");
  }
  std::string named_by(PythonFrameNames& names) const {
    uint64_t frames[] = {reinterpret_cast<uint64_t>(code), 0};
    auto groups = names.groups(::getpid(), *python_offsets(11), kCodeType, frames);
    return groups.size() == 1 && groups[0].size() == 1 ? groups[0][0] : "(none)";
  }
};

TEST(PythonRuntimeTest, ANameIsCheckedAgainstItsCodeObjectAtItsFirstUseInASnapshot) {
  PythonFrameNames names;
  FakeCode fake;
  const PythonOffsets& layout = *python_offsets(11);
  auto code = reinterpret_cast<uint64_t>(fake.code);
  // Not a code object yet when the sampler met its address (a frame being set up): unknown, and
  // read again at its use.
  fake.become(0x1234, "early", 1);
  names.remember(::getpid(), layout, FakeCode::kCodeType, code);
  fake.become(FakeCode::kCodeType, "alpha", 10);
  EXPECT_EQ(fake.named_by(names), "alpha (a.py:10)_[p]");
  // Freed, and another code object allocated at its address: named anew at the next snapshot.
  fake.become(FakeCode::kCodeType, "beta", 20);
  EXPECT_EQ(fake.named_by(names), "alpha (a.py:10)_[p]") << "checked once a snapshot";
  names.end_snapshot({});
  EXPECT_EQ(fake.named_by(names), "beta (a.py:20)_[p]");
  // Freed, and something else in its place: the name it had stays.
  fake.become(0x5678, "junk", 30);
  names.end_snapshot({});
  EXPECT_EQ(fake.named_by(names), "beta (a.py:20)_[p]");
  EXPECT_EQ(names.size(), 1u);
}

}  // namespace
}  // namespace dormant::profilers::system
