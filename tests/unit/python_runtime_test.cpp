// What the Python walk knows of CPython: the 3.11 offsets against CPython's own headers, Debian's
// interpreter read as the sampler reads it, and Python frames put where their evaluation loops'
// native frames were.
#include "profilers/system/python_runtime.h"

#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>

#include "common/deadline.h"
#include "common/subprocess.h"
#include "profilers/system/python_frames.h"

namespace dormant::profilers::system {
namespace {

TEST(PythonRuntimeTest, The311OffsetsAreThoseOfCPythonsHeaders) {
  auto output = run_command({PYTHON311_OFFSETS_PROBE}, deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(output.ok()) << output.error().message();
  std::map<std::string, int> probed;
  std::istringstream lines(output->stdout_text);
  std::string name;
  int value = 0;
  while (lines >> name >> value) probed[name] = value;
  const PythonOffsets* offsets = python_offsets(11);
  ASSERT_NE(offsets, nullptr);
  std::map<std::string, int> kept = {
      {"runtime_interpreters_head", offsets->runtime_interpreters_head},
      {"interpreter_threads_head", offsets->interpreter_threads_head},
      {"thread_next", offsets->thread_next},
      {"thread_pthread", offsets->thread_pthread},
      {"thread_frame", offsets->thread_frame},
      {"cframe_current_frame", offsets->cframe_current_frame},
      {"frame_code", offsets->frame_code},
      {"frame_previous", offsets->frame_previous},
      {"frame_instruction", offsets->frame_instruction},
      {"frame_is_entry", offsets->frame_is_entry},
      {"object_type", offsets->object_type},
      {"code_filename", offsets->code_filename},
      {"code_name", offsets->code_name},
      {"code_qualname", offsets->code_qualname},
      {"code_first_line", offsets->code_first_line},
      {"unicode_length", offsets->unicode_length},
      {"unicode_state", offsets->unicode_state},
      {"unicode_ascii_data", offsets->unicode_ascii_data},
      {"unicode_compact_data", offsets->unicode_compact_data},
  };
  EXPECT_EQ(probed, kept);
  EXPECT_EQ(offsets->frame_owner, -1) << "3.11 marks entries with is_entry";
}

TEST(PythonRuntimeTest, VersionsWithoutALayoutHaveNone) {
  EXPECT_EQ(python_offsets(8), nullptr);
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
  names.forget({999999});
  EXPECT_EQ(names.size(), 0u);
}

}  // namespace
}  // namespace dormant::profilers::system
