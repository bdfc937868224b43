// What the agent reads of V8's objects to name a JavaScript frame, against fake objects laid out
// in this process's own memory as node 20's V8 lays them out (read, as any process's, with
// process_vm_readv): a function named in its ScopeInfo or its SharedFunctionInfo, an anonymous one
// by the name V8 inferred, strings in one or two bytes, cons and thin, and hostile objects.
#include "profilers/system/javascript_frames.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

namespace dormant::profilers::system {
namespace {

constexpr uint32_t kOneByteString = 0x08;  // sequential, one byte
constexpr uint32_t kTwoByteString = 0x00;
constexpr uint32_t kConsString = 0x01;
constexpr uint32_t kThinString = 0x05;
constexpr uint32_t kOddball = 131;
constexpr uint32_t kScopeInfo = 261;
constexpr uint32_t kScript = 150;
constexpr uint32_t kSharedFunctionInfo = 180;
constexpr uint32_t kJsFunction = 2066;

V8Layout node20_layout() {
  V8Layout layout;
  layout.fp_function = -16;
  layout.fp_context = -8;
  layout.heap_object_tag = 1;
  layout.heap_object_tag_mask = 3;
  layout.smi_shift = 32;
  layout.object_map = 0;
  layout.map_instance_type = 12;
  layout.first_nonstring_type = 128;
  layout.string_representation_mask = 7;
  layout.string_encoding_mask = 8;
  layout.seq_string_tag = 0;
  layout.cons_string_tag = 1;
  layout.thin_string_tag = 5;
  layout.one_byte_string_tag = 8;
  layout.string_length = 12;
  layout.seq_one_byte_chars = 16;
  layout.seq_two_byte_chars = 16;
  layout.cons_first = 16;
  layout.cons_second = 24;
  layout.thin_actual = 16;
  layout.js_function_type = kJsFunction;
  layout.scope_info_type = kScopeInfo;
  layout.script_type = kScript;
  layout.js_function_shared = 24;
  layout.shared_name_or_scope_info = 16;
  layout.shared_script_or_debug_info = 32;
  layout.script_name = 24;
  layout.script_source = 16;
  return layout;
}

// A heap of tagged objects: each a map word, then its fields.
class FakeHeap {
 public:
  FakeHeap() : memory_(1 << 16) {}

  uint64_t map_of(uint32_t type) {
    uint64_t map = allocate(16);
    std::memcpy(at(map) + 12, &type, 2);
    return map;
  }
  uint64_t object(uint32_t type, size_t bytes) {
    uint64_t object = allocate(bytes);
    put(object, 0, map_of(type));
    return object;
  }
  uint64_t one_byte(const std::string& text) {
    uint64_t string = object(kOneByteString, 16 + text.size());
    int32_t length = static_cast<int32_t>(text.size());
    std::memcpy(at(string) + 12, &length, 4);
    std::memcpy(at(string) + 16, text.data(), text.size());
    return string;
  }
  uint64_t two_byte(const std::u16string& text) {
    uint64_t string = object(kTwoByteString, 16 + 2 * text.size());
    int32_t length = static_cast<int32_t>(text.size());
    std::memcpy(at(string) + 12, &length, 4);
    std::memcpy(at(string) + 16, text.data(), 2 * text.size());
    return string;
  }
  uint64_t cons(uint64_t first, uint64_t second, int32_t length) {
    uint64_t string = object(kConsString, 32);
    std::memcpy(at(string) + 12, &length, 4);
    put(string, 16, first);
    put(string, 24, second);
    return string;
  }
  uint64_t thin(uint64_t actual, int32_t length) {
    uint64_t string = object(kThinString, 24);
    std::memcpy(at(string) + 12, &length, 4);
    put(string, 16, actual);
    return string;
  }
  static uint64_t smi(int64_t value) { return static_cast<uint64_t>(value) << 32; }

  // A ScopeInfo: flags, parameters, `locals` context locals (names and properties), then the
  // function variable's name and index, the inferred name, the start and end positions.
  uint64_t scope_info(int64_t locals, uint64_t name, uint64_t inferred, int64_t start) {
    size_t slots = 3 + 2 * static_cast<size_t>(locals) + 6;
    uint64_t info = object(kScopeInfo, 8 + 8 * slots);
    put(info, 8, smi(0x4171e2));
    put(info, 16, smi(0));
    put(info, 24, smi(locals));
    size_t slot = 32 + 16 * static_cast<size_t>(locals);
    for (int64_t i = 0; i < locals; ++i) put(info, 32 + 8 * static_cast<size_t>(i), one_byte("x"));
    put(info, slot, name);
    put(info, slot + 8, smi(-1));
    put(info, slot + 16, inferred);
    put(info, slot + 24, smi(start));
    put(info, slot + 32, smi(start + 10));
    return info;
  }
  uint64_t function(uint64_t name_or_scope_info, uint64_t script) {
    uint64_t shared = object(kSharedFunctionInfo, 40);
    put(shared, 16, name_or_scope_info);
    put(shared, 32, script);
    uint64_t function = object(kJsFunction, 32);
    put(function, 24, shared);
    return function;
  }
  uint64_t script(uint64_t name, uint64_t source) {
    uint64_t script = object(kScript, 32);
    put(script, 24, name);
    put(script, 16, source);
    return script;
  }
  uint64_t undefined() { return object(kOddball, 16); }
  void put(uint64_t object, size_t offset, uint64_t value) {
    std::memcpy(at(object) + offset, &value, 8);
  }

 private:
  uint8_t* at(uint64_t object) { return reinterpret_cast<uint8_t*>(object - 1); }
  uint64_t allocate(size_t bytes) {
    size_t offset = used_;
    used_ += (bytes + 15) / 16 * 16;
    if (used_ > memory_.size()) throw std::runtime_error("fake heap full");
    return reinterpret_cast<uint64_t>(memory_.data() + offset) + 1;
  }

  std::vector<uint8_t> memory_;
  size_t used_ = 0;
};

TEST(JavaScriptFrames, FunctionsAreNamedWithTheirScriptAndLine) {
  FakeHeap heap;
  V8Layout layout = node20_layout();
  uint64_t source = heap.one_byte("// one\n\nfunction alpha() {\n  return 1;\n}\n");
  uint64_t script = heap.script(heap.one_byte("/srv/app.js"), source);
  uint64_t named =
      heap.function(heap.scope_info(2, heap.one_byte("alpha"), heap.undefined(), 9), script);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, named), "JS:alpha /srv/app.js:3");
  uint64_t inferred = heap.function(
      heap.scope_info(0, heap.one_byte(""), heap.one_byte("Module._load"), 0), script);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, inferred), "JS:Module._load /srv/app.js:1");
  uint64_t anonymous =
      heap.function(heap.scope_info(0, heap.one_byte(""), heap.undefined(), 0), script);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, anonymous), "JS:(anonymous) /srv/app.js:1");
  uint64_t by_shared_name = heap.function(heap.two_byte(u"b\u00e9ta;\n"), heap.undefined());
  EXPECT_EQ(read_javascript_name(::getpid(), layout, by_shared_name), "JS:b\xc3\xa9ta:?");
  // A source in two pieces, the second two-byte: the line counts newlines in characters.
  uint64_t joined =
      heap.cons(heap.one_byte("// a\n"), heap.two_byte(u"\u00e9\n\nfunction b() {}"), 23);
  uint64_t later = heap.function(heap.scope_info(0, heap.one_byte("b"), heap.undefined(), 8),
                                 heap.script(heap.one_byte("/srv/b.js"), joined));
  EXPECT_EQ(read_javascript_name(::getpid(), layout, later), "JS:b /srv/b.js:4");
  uint64_t pieces = heap.cons(heap.one_byte("gam"), heap.thin(heap.one_byte("ma"), 2), 5);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, heap.function(pieces, heap.undefined())),
            "JS:gamma");
}

TEST(JavaScriptFrames, WhatIsNotAFunctionOrLiesAboutItselfIsNotNamedOrBounded) {
  FakeHeap heap;
  V8Layout layout = node20_layout();
  EXPECT_EQ(read_javascript_name(::getpid(), layout, heap.one_byte("not a function")),
            std::nullopt);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, FakeHeap::smi(7)), std::nullopt);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, 0x11), std::nullopt) << "unmapped";
  // A name that claims two gigabytes, a cons string that contains itself, a ScopeInfo with a
  // billion locals: named as anonymous, within bounds.
  uint64_t huge = heap.one_byte("x");
  heap.put(huge, 8, uint64_t{0x7fffffff} << 32);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, heap.function(huge, heap.undefined())),
            "JS:(anonymous)");
  uint64_t cycle = heap.cons(0, 0, 4);
  heap.put(cycle, 16, cycle);
  heap.put(cycle, 24, cycle);
  EXPECT_EQ(read_javascript_name(::getpid(), layout, heap.function(cycle, heap.undefined())),
            "JS:(anonymous)");
  uint64_t many_locals = heap.scope_info(0, heap.one_byte("f"), heap.undefined(), 0);
  heap.put(many_locals, 24, FakeHeap::smi(1'000'000'000));
  EXPECT_EQ(read_javascript_name(::getpid(), layout, heap.function(many_locals, heap.undefined())),
            "JS:(anonymous)");
}

TEST(JavaScriptFrames, NamesReadWhileAFunctionLivedOutliveItsMove) {
  FakeHeap heap;
  V8Layout layout = node20_layout();
  uint64_t function = heap.function(heap.one_byte("alpha"), heap.undefined());
  JavaScriptFrameNames names;
  names.remember(::getpid(), layout, function);
  heap.put(function, 0, heap.map_of(kOddball));  // the collector moved it: something else is here
  names.end_snapshot({});
  EXPECT_EQ(names.name(::getpid(), layout, function), "JS:alpha");
  names.end_snapshot({::getpid()});
  EXPECT_EQ(names.name(::getpid(), layout, function), std::nullopt) << "forgotten with its process";
}

}  // namespace
}  // namespace dormant::profilers::system
