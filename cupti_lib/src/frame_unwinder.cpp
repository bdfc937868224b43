#include "cupti_lib/src/frame_unwinder.h"

#include <cstring>
#include <memory>
#include <new>

#include <pthread.h>

// libgcc's FDE lookup (unwind-dw2-fde.h), exported by the libgcc_eh linked into this library.
extern "C" {
struct dwarf_eh_bases {
  void* tbase;
  void* dbase;
  void* func;
};
const void* _Unwind_Find_FDE(void* pc, dwarf_eh_bases* bases);
}

namespace dormant::cupti {
namespace {

#if defined(__x86_64__)

constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kReturnAddress = 16;

// How to go from a frame to its caller's.
struct FrameRule {
  enum Kind : int8_t {
    kLast,         // no caller: no rules for this code, or its return address is undefined
    kFollowed,     // the fields below say how
    kNeedsLibgcc,  // rules beyond those below
  };
  Kind kind = kLast;
  int8_t cfa_register = 0;  // kRsp or kRbp
  bool rbp_saved = false;   // else the caller's rbp is this frame's
  int32_t cfa_offset = 0;
  int32_t return_address_at = 0;  // from the CFA
  int32_t rbp_at = 0;             // from the CFA
};

// Reads DWARF's little pieces, never past `end`.
struct Reader {
  const uint8_t* at;
  const uint8_t* end;
  bool ok = true;

  uint8_t u8() {
    if (at >= end) {
      ok = false;
      return 0;
    }
    return *at++;
  }
  uint64_t uleb() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte = u8();
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    ok = false;
    return value;
  }
  int64_t sleb() {
    int64_t value = 0;
    int shift = 0;
    uint8_t byte;
    do {
      byte = u8();
      value |= int64_t{byte & 0x7f} << shift;
      shift += 7;
    } while ((byte & 0x80) && shift < 64 && ok);
    if (shift < 64 && (byte & 0x40)) value |= -(int64_t{1} << shift);
    return value;
  }
  template <typename T>
  T fixed() {
    T value{};
    if (end - at < static_cast<ptrdiff_t>(sizeof(T))) {
      ok = false;
      return value;
    }
    std::memcpy(&value, at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  // An encoded pointer's value, for DW_CFA_set_loc; the others are only skipped.
  uint64_t pointer(uint8_t encoding) {
    const uint8_t* field = at;
    uint64_t value = 0;
    switch (encoding & 0x0f) {
      case 0x00:
        value = fixed<uint64_t>();
        break;  // absptr
      case 0x01:
        value = uleb();
        break;
      case 0x02:
        value = fixed<uint16_t>();
        break;
      case 0x03:
        value = fixed<uint32_t>();
        break;
      case 0x04:
        value = fixed<uint64_t>();
        break;
      case 0x09:
        value = static_cast<uint64_t>(sleb());
        break;
      case 0x0a:
        value = static_cast<uint64_t>(fixed<int16_t>());
        break;
      case 0x0b:
        value = static_cast<uint64_t>(fixed<int32_t>());
        break;
      case 0x0c:
        value = fixed<uint64_t>();
        break;
      default:
        ok = false;
        return 0;
    }
    if ((encoding & 0x70) == 0x10) value += reinterpret_cast<uintptr_t>(field);  // pcrel
    return value;
  }
};

struct Rules {
  int cfa_register = kRsp;
  int64_t cfa_offset = 8;
  int8_t rbp = 0;  // 0 same value, 1 saved at CFA + rbp_at, -1 beyond us
  int8_t ra = 1;
  int64_t rbp_at = 0;
  int64_t ra_at = -8;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

bool read_cie(const uint8_t* cie, Cie& out) {
  uint32_t length;
  std::memcpy(&length, cie, 4);
  if (length == 0 || length == 0xffffffff) return false;
  Reader reader{cie + 4, cie + 4 + length};
  if (reader.fixed<uint32_t>() != 0) return false;  // a CIE's id
  uint8_t version = reader.u8();
  const char* augmentation = reinterpret_cast<const char*>(reader.at);
  size_t augmentation_length = strnlen(augmentation, static_cast<size_t>(reader.end - reader.at));
  reader.at += augmentation_length + 1;
  out.code_align = reader.uleb();
  out.data_align = reader.sleb();
  if (version == 1) {
    (void)reader.u8();
  } else {
    (void)reader.uleb();
  }
  if (augmentation[0] == 'z') {
    out.has_augmentation_data = true;
    uint64_t data_length = reader.uleb();
    const uint8_t* data_end = reader.at + data_length;
    for (size_t i = 1; i < augmentation_length; ++i) {
      switch (augmentation[i]) {
        case 'R':
          out.fde_encoding = reader.u8();
          break;
        case 'P':
          (void)reader.pointer(reader.u8());
          break;
        case 'L':
          (void)reader.u8();
          break;
        case 'S':
          out.signal_frame = true;
          break;
        default:
          reader.at = data_end;
          break;  // one we do not know: the rest is skipped
      }
    }
    reader.at = data_end;
  } else if (augmentation_length != 0) {
    return false;
  }
  out.instructions = reader.at;
  out.end = reader.end;
  return reader.ok && reader.at <= reader.end;
}

// Runs CFA instructions until the location passes `pc`; false if they need more than `Rules`.
bool run(Reader reader, const Cie& cie, uint64_t location, uint64_t pc, Rules& rules,
         const Rules& initial) {
  Rules saved[8];
  int depth = 0;
  while (reader.at < reader.end && reader.ok) {
    uint8_t op = reader.u8();
    uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:  // advance_loc
        location += low * cie.code_align;
        if (location > pc) return true;
        continue;
      case 2: {  // offset
        int64_t at = static_cast<int64_t>(reader.uleb()) * cie.data_align;
        if (low == kRbp) rules.rbp = 1, rules.rbp_at = at;
        if (low == kReturnAddress) rules.ra = 1, rules.ra_at = at;
        continue;
      }
      case 3:  // restore
        if (low == kRbp) rules.rbp = initial.rbp, rules.rbp_at = initial.rbp_at;
        if (low == kReturnAddress) rules.ra = initial.ra, rules.ra_at = initial.ra_at;
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:
        break;  // nop
      case 0x01:
        location = reader.pointer(cie.fde_encoding);
        if (location > pc) return true;
        break;
      case 0x02:
        location += reader.u8() * cie.code_align;
        if (location > pc) return true;
        break;
      case 0x03:
        location += reader.fixed<uint16_t>() * cie.code_align;
        if (location > pc) return true;
        break;
      case 0x04:
        location += reader.fixed<uint32_t>() * cie.code_align;
        if (location > pc) return true;
        break;
      case 0x05:    // offset_extended
      case 0x11: {  // offset_extended_sf
        uint64_t reg = reader.uleb();
        int64_t at =
            (op == 0x05 ? static_cast<int64_t>(reader.uleb()) : reader.sleb()) * cie.data_align;
        if (reg == kRbp) rules.rbp = 1, rules.rbp_at = at;
        if (reg == kReturnAddress) rules.ra = 1, rules.ra_at = at;
        break;
      }
      case 0x06: {  // restore_extended
        uint64_t reg = reader.uleb();
        if (reg == kRbp) rules.rbp = initial.rbp, rules.rbp_at = initial.rbp_at;
        if (reg == kReturnAddress) rules.ra = initial.ra, rules.ra_at = initial.ra_at;
        break;
      }
      case 0x07:    // undefined
      case 0x08: {  // same_value
        uint64_t reg = reader.uleb();
        if (reg == kRbp) rules.rbp = op == 0x08 ? 0 : -1;
        if (reg == kReturnAddress) rules.ra = op == 0x08 ? 0 : -1;  // undefined: the stack's end
        break;
      }
      case 0x09: {  // register
        uint64_t reg = reader.uleb();
        (void)reader.uleb();
        if (reg == kRbp || reg == kReturnAddress) return false;
        break;
      }
      case 0x0a:
        if (depth == 8) return false;
        saved[depth++] = rules;
        break;
      case 0x0b:
        if (depth == 0) return false;
        rules = saved[--depth];
        break;
      case 0x0c:
        rules.cfa_register = static_cast<int>(reader.uleb());
        rules.cfa_offset = static_cast<int64_t>(reader.uleb());
        break;
      case 0x0d:
        rules.cfa_register = static_cast<int>(reader.uleb());
        break;
      case 0x0e:
        rules.cfa_offset = static_cast<int64_t>(reader.uleb());
        break;
      case 0x12:
        rules.cfa_register = static_cast<int>(reader.uleb());
        rules.cfa_offset = reader.sleb() * cie.data_align;
        break;
      case 0x13:
        rules.cfa_offset = reader.sleb() * cie.data_align;
        break;
      case 0x10: {  // expression: fine for registers we do not restore
        uint64_t reg = reader.uleb();
        reader.at += reader.uleb();
        if (reg == kRbp || reg == kReturnAddress) return false;
        break;
      }
      case 0x2e:
        (void)reader.uleb();
        break;  // GNU_args_size
      default:
        return false;  // def_cfa_expression, val_offset, ...: libgcc's
    }
  }
  return reader.ok;
}

FrameRule rule_for(uint64_t pc) {
  FrameRule rule;
  dwarf_eh_bases bases{};
  const auto* fde =
      static_cast<const uint8_t*>(_Unwind_Find_FDE(reinterpret_cast<void*>(pc), &bases));
  if (fde == nullptr) return rule;  // no rules: the end of the stack, or code we cannot unwind
  rule.kind = FrameRule::kNeedsLibgcc;
  uint32_t length;
  std::memcpy(&length, fde, 4);
  int32_t cie_pointer;
  std::memcpy(&cie_pointer, fde + 4, 4);
  if (length == 0xffffffff) return rule;
  Cie cie;
  if (!read_cie(fde + 4 - cie_pointer, cie) || cie.signal_frame) return rule;
  Reader reader{fde + 8, fde + 4 + length};
  (void)reader.pointer(cie.fde_encoding);         // pc_begin: bases.func holds it
  (void)reader.pointer(cie.fde_encoding & 0x0f);  // pc_range
  if (cie.has_augmentation_data) reader.at += reader.uleb();
  Rules initial;
  if (!run(Reader{cie.instructions, cie.end}, cie, 0, UINT64_MAX, initial, initial)) return rule;
  Rules rules = initial;
  if (!reader.ok ||
      !run(reader, cie, reinterpret_cast<uintptr_t>(bases.func), pc, rules, initial)) {
    return rule;
  }
  if (rules.ra == -1) {  // undefined: the outermost frame (_start, a thread's start)
    rule.kind = FrameRule::kLast;
    return rule;
  }
  if ((rules.cfa_register != kRsp && rules.cfa_register != kRbp) || rules.ra != 1 ||
      rules.rbp < 0 || rules.cfa_offset < 0 || rules.cfa_offset > INT32_MAX ||
      rules.ra_at < INT32_MIN || rules.ra_at > INT32_MAX || rules.rbp_at < INT32_MIN ||
      rules.rbp_at > INT32_MAX) {
    return rule;
  }
  rule.cfa_register = static_cast<int8_t>(rules.cfa_register);
  rule.cfa_offset = static_cast<int32_t>(rules.cfa_offset);
  rule.return_address_at = static_cast<int32_t>(rules.ra_at);
  rule.rbp_saved = rules.rbp == 1;
  rule.rbp_at = static_cast<int32_t>(rules.rbp_at);
  rule.kind = FrameRule::kFollowed;
  return rule;
}

// Per thread: the rules of the return addresses it has seen, and where its stack is.
struct ThreadCache {
  static constexpr size_t kSlots = 1024;
  struct Slot {
    uint64_t pc = 0;
    FrameRule rule;
  };
  Slot slots[kSlots];
  uintptr_t stack_low = 0;
  uintptr_t stack_high = 0;

  const FrameRule& rule(uint64_t pc) {
    Slot& slot = slots[(pc ^ (pc >> 10)) % kSlots];
    if (slot.pc != pc) {
      slot.rule = rule_for(pc);
      slot.pc = pc;
    }
    return slot.rule;
  }
};
thread_local std::unique_ptr<ThreadCache> t_cache;  // freed when its thread ends

ThreadCache* thread_cache() {
  if (t_cache) return t_cache.get();
  std::unique_ptr<ThreadCache> cache(new (std::nothrow) ThreadCache());
  if (!cache) return nullptr;
  pthread_attr_t attributes;
  void* low = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
    pthread_attr_getstack(&attributes, &low, &size);
    pthread_attr_destroy(&attributes);
  }
  cache->stack_low = reinterpret_cast<uintptr_t>(low);
  cache->stack_high = cache->stack_low + size;
  t_cache = std::move(cache);
  return t_cache.get();
}

// Other frames' slots, which AddressSanitizer (in the tests' builds) would take for overflows.
__attribute__((no_sanitize("address"))) bool read_stack(const ThreadCache& cache, uintptr_t address,
                                                        uint64_t& value) {
  if (address < cache.stack_low || address > cache.stack_high - sizeof(value)) return false;
  value = *reinterpret_cast<const volatile uint64_t*>(address);
  return true;
}

#endif

}  // namespace

__attribute__((noinline)) int unwind_caller_stack(uint64_t* frames, int capacity) {
#if defined(__x86_64__)
  ThreadCache* cache = thread_cache();
  if (cache == nullptr || cache->stack_high == 0) return -1;
  // This function keeps a frame pointer: its frame gives the caller's registers at the call.
  auto* frame = static_cast<uint64_t*>(__builtin_frame_address(0));
  uint64_t rbp = frame[0];
  uint64_t pc = frame[1];
  uint64_t rsp = reinterpret_cast<uintptr_t>(frame + 2);
  int depth = 0;
  while (depth < capacity && pc != 0) {
    frames[depth++] = pc - 1;
    const FrameRule& rule = cache->rule(pc - 1);
    if (rule.kind == FrameRule::kNeedsLibgcc) return -1;
    if (rule.kind == FrameRule::kLast) break;
    uint64_t cfa = (rule.cfa_register == kRsp ? rsp : rbp) + static_cast<int64_t>(rule.cfa_offset);
    uint64_t caller_pc = 0;
    if (cfa <= rsp || !read_stack(*cache, cfa + rule.return_address_at, caller_pc)) break;
    if (rule.rbp_saved && !read_stack(*cache, cfa + rule.rbp_at, rbp)) break;
    rsp = cfa;
    pc = caller_pc;
  }
  return depth;
#else
  (void)frames;
  (void)capacity;
  return -1;
#endif
}

}  // namespace dormant::cupti
