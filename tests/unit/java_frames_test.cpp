// What the agent reads of a HotSpot JVM, against a fake one laid out in this process's own memory
// (read as the agent reads any JVM's, with process_vm_readv): its structure tables, the code
// blob holding an address, and Java frames named gProfiler's way, inlined methods from the
// nmethod's debug information only while the nmethod still compiles the method sampled.
#include "profilers/system/java_frames.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "bpf/runtime_frames.h"
#include "profilers/system/hotspot_structs.h"
#include "profilers/system/hotspot_vm.h"

namespace dormant::profilers::system {
namespace {

uint64_t address_of(const void* pointer) { return reinterpret_cast<uint64_t>(pointer); }

template <typename T>
void put(std::vector<uint8_t>& memory, size_t at, T value) {
  std::memcpy(memory.data() + at, &value, sizeof(value));
}

// A JVM of two classes' methods and one nmethod, in memory laid out as HotSpot's offsets say.
class FakeJvm {
 public:
  static constexpr size_t kSegmentShift = 6;
  static constexpr size_t kBlobAt = 64 * 3 + 16;  // the fourth block's, after its header
  static constexpr size_t kCodeAt = kBlobAt + 512;

  FakeJvm() : metaspace_(4096), heap_(64 * 32), segment_map_(32, 0xff) {
    vm_.offsets = {.heap_block_size = 16,
                   .blob_name = 96,
                   .blob_frame_size = 28,
                   .blob_frame_complete = 20,
                   .blob_code_begin = 32,
                   .nmethod_method = 112,
                   .nmethod_comp_level = 308,
                   .nmethod_metadata_offset = 260,
                   .nmethod_scopes_data_begin = 120,
                   .nmethod_scopes_pcs_offset = 268,
                   .nmethod_dependencies_offset = 272,
                   .pc_desc_size = 16,
                   .pc_desc_pc_offset = 0,
                   .pc_desc_scope_decode_offset = 4,
                   .method_const_method = 8,
                   .const_method_constants = 8,
                   .const_method_name_index = 34,
                   .constant_pool_holder = 24,
                   .constant_pool_size = 72,
                   .klass_name = 24,
                   .symbol_length = 4,
                   .symbol_body = 6};
    outer_ = add_method("com/example/Outer", "run");
    inner_ = add_method("com/example/Inner", "step");
    other_ = add_method("com/example/Other", "elsewhere;odd\n");
    // The block: segments 3 to 19, its map counting back to its first.
    for (size_t i = 3; i < 20; ++i) segment_map_[i] = static_cast<uint8_t>(i - 3);
    vm_.heaps = {{address_of(heap_.data()), address_of(heap_.data()) + heap_.size(),
                  address_of(segment_map_.data())}};
    vm_.segment_shift = kSegmentShift;
    vm_.code_low = address_of(heap_.data());
    vm_.code_high = vm_.code_low + heap_.size();
    put<uint64_t>(heap_, kBlobAt + 96, address_of(kNmethod));
    put<uint64_t>(heap_, kBlobAt + 32, blob() + 512);
    put<uint64_t>(heap_, kBlobAt + 112, outer_);
    put<int32_t>(heap_, kBlobAt + 308, 4);
    // Metadata: [outer, inner]; the debug stream: inner at offset 8, called from outer at 1.
    put<int32_t>(heap_, kBlobAt + 260, 400);
    put<uint64_t>(heap_, kBlobAt + 400, outer_);
    put<uint64_t>(heap_, kBlobAt + 408, inner_);
    put<uint64_t>(heap_, kBlobAt + 120, blob() + 640);
    const uint8_t outer_scope[] = {0, 1, 7};  // sender: none; method 1; bci 6
    const uint8_t inner_scope[] = {1, 2, 3};  // sender: the scope at 1; method 2; bci 2
    std::memcpy(heap_.data() + kBlobAt + 640 + 1, outer_scope, sizeof(outer_scope));
    std::memcpy(heap_.data() + kBlobAt + 640 + 8, inner_scope, sizeof(inner_scope));
    // PcDescs: the sentinel, a call in inner (code + 0x10), a safepoint in outer (code + 0x40).
    put<int32_t>(heap_, kBlobAt + 268, 700);
    put<int32_t>(heap_, kBlobAt + 272, 700 + 3 * 16);
    const int32_t pcs[][2] = {{-1, 0}, {0x10, 8}, {0x40, 1}};
    for (size_t i = 0; i < 3; ++i) {
      put<int32_t>(heap_, kBlobAt + 700 + 16 * i, pcs[i][0]);
      put<int32_t>(heap_, kBlobAt + 700 + 16 * i + 4, pcs[i][1]);
    }
  }

  const HotSpotVm& vm() const { return vm_; }
  uint64_t blob() const { return address_of(heap_.data()) + kBlobAt; }
  uint64_t code() const { return blob() + 512; }
  uint64_t outer() const { return outer_; }
  uint64_t inner() const { return inner_; }
  uint64_t other() const { return other_; }
  void recompile_as(uint64_t method) { put<uint64_t>(heap_, kBlobAt + 112, method); }

  static uint64_t marked(uint64_t address, int kind, int level) {
    return address | DORMANT_RUNTIME_FRAME | (uint64_t(kind) << DORMANT_RUNTIME_KIND_SHIFT) |
           (uint64_t(level) << DORMANT_RUNTIME_LEVEL_SHIFT);
  }

 private:
  static constexpr char kNmethod[] = "nmethod";

  uint64_t symbol(const std::string& text) {
    size_t at = allocate(8 + text.size());
    put<uint16_t>(metaspace_, at + 4, static_cast<uint16_t>(text.size()));
    std::memcpy(metaspace_.data() + at + 6, text.data(), text.size());
    return address_of(metaspace_.data() + at);
  }

  // A class of one method: Method -> ConstMethod -> ConstantPool -> Klass, names in its pool.
  uint64_t add_method(const std::string& klass_name, const std::string& method_name) {
    size_t klass = allocate(32);
    put<uint64_t>(metaspace_, klass + 24, symbol(klass_name));
    size_t pool = allocate(72 + 8 * 4);
    put<uint64_t>(metaspace_, pool + 24, address_of(metaspace_.data() + klass));
    put<uint64_t>(metaspace_, pool + 72 + 8 * 3, symbol(method_name));
    size_t const_method = allocate(48);
    put<uint64_t>(metaspace_, const_method + 8, address_of(metaspace_.data() + pool));
    put<uint16_t>(metaspace_, const_method + 34, 3);
    size_t method = allocate(16);
    put<uint64_t>(metaspace_, method + 8, address_of(metaspace_.data() + const_method));
    return address_of(metaspace_.data() + method);
  }

  size_t allocate(size_t bytes) {
    size_t at = used_;
    used_ += (bytes + 15) / 16 * 16;
    return at;
  }

  std::vector<uint8_t> metaspace_;
  std::vector<uint8_t> heap_;
  std::vector<uint8_t> segment_map_;
  size_t used_ = 0;
  HotSpotVm vm_;
  uint64_t outer_ = 0, inner_ = 0, other_ = 0;
};

TEST(JavaFrames, CompressedIntsAreReadAsHotSpotWritesThem) {
  const uint8_t stream[] = {5, 191, 236, 1, 255, 255, 255, 255, 3, 200};
  size_t at = 0;
  EXPECT_EQ(read_compressed_int(stream, at), 5u);
  EXPECT_EQ(read_compressed_int(stream, at), 191u);
  EXPECT_EQ(read_compressed_int(stream, at), 300u);  // 236 + 1 << 6
  EXPECT_EQ(read_compressed_int(stream, at),
            255u + (255u << 6) + (255u << 12) + (255u << 18) + (3u << 24));
  EXPECT_EQ(at, 9u);
  EXPECT_EQ(read_compressed_int(stream, at), std::nullopt) << "a stream cut short";
}

TEST(JavaFrames, MethodNamesAreDottedAndCarryNoSeparators) {
  EXPECT_EQ(java_method_name("java/util/HashMap", "get"), "java.util.HashMap.get");
  EXPECT_EQ(java_method_name("A", "b;c\nd"), "A.b|c?d");
}

TEST(JavaFrames, TheBlobHoldingAnAddressIsFoundByTheSegmentMap) {
  FakeJvm jvm;
  EXPECT_EQ(jvm.vm().blob_at(::getpid(), jvm.code() + 0x10), jvm.blob());
  EXPECT_EQ(jvm.vm().blob_at(::getpid(), jvm.blob() - 32), std::nullopt) << "a free segment";
  EXPECT_EQ(jvm.vm().blob_at(::getpid(), jvm.vm().code_high), std::nullopt);
}

TEST(JavaFrames, CompiledFramesCarryTheMethodsInlinedAtTheirAddress) {
  FakeJvm jvm;
  JavaFrameNames names;
  pid_t self = ::getpid();
  using Names = std::vector<std::string>;
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(jvm.code() + 0x10, 2, 4), jvm.outer()),
            (Names{"com.example.Outer.run_[j]", "com.example.Inner.step_[i]"}));
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(jvm.code() + 0x30, 2, 4), jvm.outer()),
            (Names{"com.example.Outer.run_[j]"}));
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(jvm.code() + 0x10, 2, 3), jvm.outer()),
            (Names{"com.example.Outer.run_[1]"}))
      << "compiled at another level since: its own method only";
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(0x1000, 1, 0), jvm.inner()),
            (Names{"com.example.Inner.step_[0]"}));
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(0x1000, 1, 0), jvm.other()),
            (Names{"com.example.Other.elsewhere|odd?_[0]"}));
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(jvm.code(), 3, 0), jvm.blob()),
            (Names{"nmethod"}));
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(0x1000, 1, 0), 0x10),
            (Names{"[unknown Java method]_[0]"}));
}

TEST(JavaFrames, AnAddressRecompiledSinceKeepsTheMethodSampledAlone) {
  FakeJvm jvm;
  JavaFrameNames names;
  pid_t self = ::getpid();
  jvm.recompile_as(jvm.other());
  EXPECT_EQ(names.names(self, jvm.vm(), FakeJvm::marked(jvm.code() + 0x10, 2, 4), jvm.outer()),
            std::vector<std::string>{"com.example.Outer.run_[j]"});
}

TEST(JavaFrames, NamesReadWhenFirstSampledOutliveTheirNmethodAndAreForgottenWithTheirJvm) {
  FakeJvm jvm;
  JavaFrameNames names;
  pid_t self = ::getpid();
  uint64_t marked = FakeJvm::marked(jvm.code() + 0x10, 2, 4);
  using Names = std::vector<std::string>;
  const Names inlined = {"com.example.Outer.run_[j]", "com.example.Inner.step_[i]"};
  names.remember(self, jvm.vm(), marked, jvm.outer());
  jvm.recompile_as(jvm.other());  // the nmethod freed and its space reused, before the snapshot
  EXPECT_EQ(names.names(self, jvm.vm(), marked, jvm.outer()), inlined);
  names.end_snapshot({});
  EXPECT_EQ(names.names(self, jvm.vm(), marked, jvm.outer()), inlined)
      << "read again with less to find: what was read keeps";
  EXPECT_EQ(names.size(), 1u);
  names.end_snapshot({self});
  EXPECT_EQ(names.size(), 0u);
  EXPECT_EQ(names.names(self, jvm.vm(), marked, jvm.outer()), Names{"com.example.Outer.run_[j]"});
}

// A structure table as libjvm.so lays one out: entries of (type, field, type string, static,
// offset, address), ended by one with no type.
struct FakeTables {
  struct Entry {
    const char* type;
    const char* field;
    const char* type_string;
    int32_t is_static;
    uint64_t offset;
    uint64_t address;
  };
  struct Type {
    const char* name;
    const char* superclass;
    uint64_t size;
  };
  std::vector<Entry> entries;
  std::vector<Type> types;
  uint64_t structs = 0, types_at = 0;
  uint64_t layout[9] = {sizeof(Entry),
                        offsetof(Entry, type),
                        offsetof(Entry, field),
                        offsetof(Entry, is_static),
                        offsetof(Entry, offset),
                        offsetof(Entry, address),
                        sizeof(Type),
                        offsetof(Type, name),
                        offsetof(Type, size)};

  std::map<std::string, uint64_t, std::less<>> symbols() {
    structs = address_of(entries.data());
    types_at = address_of(types.data());
    const char* names[] = {
        "gHotSpotVMStructEntryArrayStride",     "gHotSpotVMStructEntryTypeNameOffset",
        "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryIsStaticOffset",
        "gHotSpotVMStructEntryOffsetOffset",    "gHotSpotVMStructEntryAddressOffset",
        "gHotSpotVMTypeEntryArrayStride",       "gHotSpotVMTypeEntryTypeNameOffset",
        "gHotSpotVMTypeEntrySizeOffset"};
    std::map<std::string, uint64_t, std::less<>> symbols;
    for (size_t i = 0; i < 9; ++i) symbols[names[i]] = address_of(&layout[i]);
    symbols["gHotSpotVMStructs"] = address_of(&structs);
    symbols["gHotSpotVMTypes"] = address_of(&types_at);
    return symbols;
  }
};

TEST(HotSpotStructs, FieldsAndSizesAreReadFromTheJvmsOwnTables) {
  FakeTables tables;
  int static_field = 0;
  tables.entries = {
      {"CodeBlob", "_frame_size", "int", 0, 28, 0},
      {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, address_of(&static_field)},
      {nullptr, nullptr, nullptr, 0, 0, 0}};
  tables.types = {{"HeapBlock", nullptr, 16}, {nullptr, nullptr, 0}};
  auto read = HotSpotStructs::read(::getpid(), tables.symbols());
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->field("CodeBlob", "_frame_size"), 28u);
  EXPECT_EQ(read->field("CodeCache", "_heaps"), address_of(&static_field));
  EXPECT_EQ(read->field("CodeBlob", "_name"), std::nullopt);
  EXPECT_EQ(read->type_size("HeapBlock"), 16u);
  auto offsets = HotSpotVm::offsets_of(*read);
  ASSERT_FALSE(offsets.ok());
  EXPECT_NE(offsets.error().message().find("lack"), std::string::npos) << offsets.error().message();
}

TEST(HotSpotStructs, HostileTablesAreRefusedWithinBounds) {
  FakeTables endless;
  endless.entries.assign(HotSpotStructs::kMaxEntries + 1, {"T", "f", "int", 0, 8, 0});
  endless.types = {{nullptr, nullptr, 0}};
  auto read = HotSpotStructs::read(::getpid(), endless.symbols());
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("no end"), std::string::npos) << read.error().message();

  FakeTables strided;
  strided.entries = {{nullptr, nullptr, nullptr, 0, 0, 0}};
  strided.types = {{nullptr, nullptr, 0}};
  auto symbols = strided.symbols();
  strided.layout[0] = 1 << 20;
  read = HotSpotStructs::read(::getpid(), symbols);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message().find("not a table's"), std::string::npos)
      << read.error().message();

  FakeTables missing;
  auto without = missing.symbols();
  without.erase("gHotSpotVMStructs");
  EXPECT_FALSE(HotSpotStructs::read(::getpid(), without).ok());
}

}  // namespace
}  // namespace dormant::profilers::system
