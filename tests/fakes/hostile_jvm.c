// A "libjvm.so" whose HotSpot is hostile: it exports the gHotSpotVM* tables, and they describe a
// code cache (an executable mapping of its own) where threads spin in code the tables lie about:
// in the "interpreter" with a frame pointer that leads nowhere; where the segment map counts back
// further than the walk may hop; in an "nmethod" whose frame is 2^31 words, whose Method's name
// says it is 65,535 bytes long and whose debug records number a billion; in one whose scopes
// name themselves as their callers. Run through hostile_jvm_main.c:
//   hostile_jvm SECONDS [old]
// "old": its tables say nmethod::_method where JDK 9+ says CompiledMethod::_method, as JDK 8's do.
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct struct_entry {
  const char* type;
  const char* field;
  const char* type_string;
  int32_t is_static;
  uint64_t offset;
  void* address;
};
struct type_entry {
  const char* name;
  const char* superclass;
  int32_t is_oop, is_integer, is_unsigned;
  uint64_t size;
};

enum { kSegmentShift = 6, kSegments = 512, kCodeBytes = 64 * 1024, kInterpreterBytes = 16 * 1024 };

static uint64_t heaps_at, low_bound, high_bound, interpreter_at;
static struct {
  int32_t length, max;
  void* data;
} heap_array;
static void* heap_list[1];
static unsigned char code_heap[344];
static unsigned char interpreter_queue[48];
static unsigned char segment_map[kSegments];
static unsigned char method[88], const_method[48], pool[72 + 8 * 4], klass[208], symbol[8];

static struct struct_entry structs[] = {
    {"CodeBlob", "_name", "const char*", 0, 96, 0},
    {"CodeBlob", "_frame_size", "int", 0, 28, 0},
    {"CodeBlob", "_frame_complete_offset", "int", 0, 20, 0},
    {"CodeBlob", "_code_begin", "address", 0, 32, 0},
    {"CompiledMethod", "_method", "Method*", 0, 112, 0},
    {"CompiledMethod", "_scopes_data_begin", "address", 0, 120, 0},
    {"nmethod", "_comp_level", "int", 0, 308, 0},
    {"nmethod", "_metadata_offset", "int", 0, 260, 0},
    {"nmethod", "_scopes_pcs_offset", "int", 0, 268, 0},
    {"nmethod", "_dependencies_offset", "int", 0, 272, 0},
    {"PcDesc", "_pc_offset", "int", 0, 0, 0},
    {"PcDesc", "_scope_decode_offset", "int", 0, 4, 0},
    {"Method", "_constMethod", "ConstMethod*", 0, 8, 0},
    {"ConstMethod", "_constants", "ConstantPool*", 0, 8, 0},
    {"ConstMethod", "_name_index", "u2", 0, 34, 0},
    {"ConstantPool", "_pool_holder", "InstanceKlass*", 0, 24, 0},
    {"Klass", "_name", "Symbol*", 0, 24, 0},
    {"Symbol", "_length", "u2", 0, 4, 0},
    {"Symbol", "_body", "u1", 0, 6, 0},
    {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &heaps_at},
    {"CodeCache", "_low_bound", "address", 1, 0, &low_bound},
    {"CodeCache", "_high_bound", "address", 1, 0, &high_bound},
    {"GrowableArrayBase", "_len", "int", 0, 0, 0},
    {"GrowableArray<int>", "_data", "int*", 0, 8, 0},
    {"CodeHeap", "_memory", "VirtualSpace", 0, 8, 0},
    {"CodeHeap", "_segmap", "VirtualSpace", 0, 120, 0},
    {"CodeHeap", "_log2_segment_size", "int", 0, 256, 0},
    {"VirtualSpace", "_low_boundary", "char*", 0, 0, 0},
    {"VirtualSpace", "_high_boundary", "char*", 0, 8, 0},
    {"AbstractInterpreter", "_code", "StubQueue*", 1, 0, &interpreter_at},
    {"StubQueue", "_stub_buffer", "address", 0, 8, 0},
    {"StubQueue", "_buffer_limit", "int", 0, 20, 0},
    {0, 0, 0, 0, 0, 0},
};
static struct type_entry types[] = {
    {"HeapBlock", 0, 0, 0, 0, 16},
    {"PcDesc", 0, 0, 0, 0, 16},
    {"ConstantPool", 0, 0, 0, 0, 72},
    {0, 0, 0, 0, 0, 0},
};

struct struct_entry* gHotSpotVMStructs = structs;
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct struct_entry);
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct struct_entry, type);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct struct_entry, field);
uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(struct struct_entry, type_string);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct struct_entry, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct struct_entry, offset);
uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(struct struct_entry, address);
struct type_entry* gHotSpotVMTypes = types;
uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(struct type_entry);
uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(struct type_entry, name);
uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(struct type_entry, size);

static void put64(unsigned char* at, uint64_t value) { memcpy(at, &value, sizeof(value)); }
static void put32(unsigned char* at, uint32_t value) { memcpy(at, &value, sizeof(value)); }

static void* spin_at(void* code) {
  ((void (*)(void))code)();  // jmp . : never returns
  return NULL;
}

// An "nmethod" at segment `segment` of the heap, its code (a spin) at its start + 512.
static unsigned char* nmethod_at(unsigned char* heap, int segment, int32_t frame_words) {
  unsigned char* blob = heap + (segment << kSegmentShift) + 16;
  static const char name[] = "nmethod";
  put64(blob + 96, (uintptr_t)name);
  put32(blob + 28, (uint32_t)frame_words);
  put64(blob + 32, (uintptr_t)(blob + 512));
  put64(blob + 112, (uintptr_t)method);
  put32(blob + 308, 99);
  blob[512] = 0xeb;  // jmp .
  blob[513] = 0xfe;
  for (int i = 1; i < 16; ++i) segment_map[segment + i] = (unsigned char)i;
  segment_map[segment] = 0;
  return blob;
}

int hostile_jvm_main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[2], "old") == 0) {
    for (struct struct_entry* entry = structs; entry->type; ++entry) {
      if (strcmp(entry->field, "_method") == 0) entry->type = "nmethod";
    }
  }
  unsigned char* code = mmap(NULL, kCodeBytes, PROT_READ | PROT_WRITE | PROT_EXEC,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) return 2;
  unsigned char* heap = code + kInterpreterBytes;
  low_bound = (uintptr_t)code;
  high_bound = (uintptr_t)code + kCodeBytes;
  heaps_at = (uintptr_t)&heap_array;
  heap_array.length = heap_array.max = 1;
  heap_array.data = heap_list;
  heap_list[0] = code_heap;
  put64(code_heap + 8, (uintptr_t)heap);                // _memory._low_boundary
  put64(code_heap + 16, (uintptr_t)code + kCodeBytes);  // _memory._high_boundary
  put64(code_heap + 120, (uintptr_t)segment_map);       // _segmap._low_boundary
  put32(code_heap + 256, kSegmentShift);
  interpreter_at = (uintptr_t)interpreter_queue;
  put64(interpreter_queue + 8, (uintptr_t)code);
  put32(interpreter_queue + 20, kInterpreterBytes);
  memset(segment_map, 1, sizeof(segment_map));  // every segment: "one more back", to segment 0
  segment_map[0] = 0xff;

  // The method every nmethod compiles: its class's name claims 65,535 bytes.
  put64(method + 8, (uintptr_t)const_method);
  put64(const_method + 8, (uintptr_t)pool);
  put64(pool + 24, (uintptr_t)klass);
  put64(klass + 24, (uintptr_t)symbol);
  memset(symbol, 0xff, sizeof(symbol));
  const_method[34] = 3;
  put64(pool + 72 + 8 * 3, (uintptr_t)symbol);

  unsigned char* huge = nmethod_at(heap, 64, 1 << 31);
  put32(huge + 268, 0);
  put32(huge + 272, 0x7fffff00);  // a billion debug records
  unsigned char* cyclic = nmethod_at(heap, 128, 2);
  put32(cyclic + 268, 1024);  // one debug record at +1024 ...
  put32(cyclic + 272, 1024 + 16);
  put32(cyclic + 1024, 0);
  put32(cyclic + 1024 + 4, 8);  // ... whose scope at 8 ...
  put64(cyclic + 120, (uintptr_t)(cyclic + 2048));
  cyclic[2048 + 8] = 8;  // ... names itself as its caller
  cyclic[2048 + 9] = 1;
  code[0x100] = 0xeb;  // the "interpreter"
  code[0x101] = 0xfe;
  heap[(400 << kSegmentShift) + 8] = 0xeb;  // 399 hops from a block's start
  heap[(400 << kSegmentShift) + 9] = 0xfe;

  unsigned char* spins[] = {code + 0x100, huge + 512, cyclic + 512,
                            heap + (400 << kSegmentShift) + 8};
  for (size_t i = 0; i < sizeof(spins) / sizeof(spins[0]); ++i) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, spin_at, spins[i]) != 0) return 2;
  }
  sleep((unsigned)(argc > 1 ? atoi(argv[1]) : 5));
  return 0;
}
