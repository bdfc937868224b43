#include "profilers/system/unwind_table.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "profilers/system/elf_file.h"

namespace dormant::profilers::system {
namespace {

// DWARF register numbers of x86_64 (the psABI's table).
constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kReturnAddress = 16;
constexpr size_t kMaxProgramHeaders = 1 << 16;
constexpr uint64_t kMaxFdes = 1 << 22;

struct DwarfCloser {
  void operator()(Dwarf* dwarf) const { dwarf_end(dwarf); }
};
struct CfiCloser {
  void operator()(Dwarf_CFI* cfi) const { dwarf_cfi_end(cfi); }
};
struct FrameFree {
  void operator()(Dwarf_Frame* frame) const { std::free(frame); }
};

// The address range of one FDE, and which section's CFI describes it (0: .eh_frame, first).
struct FdeRange {
  uint64_t start;
  uint64_t end;
  int source;
};

// Reads a pointer encoded as DW_EH_PE_* `encoding` at `at` (whose address is `address`);
// nullopt for an encoding an FDE's range cannot use here, or one past `end`.
std::optional<uint64_t> read_encoded(uint8_t encoding, const uint8_t*& at, const uint8_t* end,
                                     uint64_t address) {
  auto take = [&](size_t bytes) -> std::optional<uint64_t> {
    if (static_cast<size_t>(end - at) < bytes) return std::nullopt;
    uint64_t value = 0;
    std::memcpy(&value, at, bytes);  // little-endian, as x86_64 is
    at += bytes;
    return value;
  };
  auto sign = [](std::optional<uint64_t> value, int bits) -> std::optional<uint64_t> {
    if (!value) return value;
    uint64_t shift = 64 - static_cast<uint64_t>(bits);
    return static_cast<uint64_t>(static_cast<int64_t>(*value << shift) >> shift);
  };
  std::optional<uint64_t> value;
  switch (encoding & 0x0f) {
    case DW_EH_PE_absptr:
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
      value = take(8);
      break;
    case DW_EH_PE_udata4:
      value = take(4);
      break;
    case DW_EH_PE_sdata4:
      value = sign(take(4), 32);
      break;
    case DW_EH_PE_udata2:
      value = take(2);
      break;
    case DW_EH_PE_sdata2:
      value = sign(take(2), 16);
      break;
    default:
      return std::nullopt;  // LEB128 pointers: no linker writes them for FDEs
  }
  if (!value) return value;
  switch (encoding & 0x70) {
    case DW_EH_PE_absptr:
      return value;
    case DW_EH_PE_pcrel:
      return *value + address;
    default:
      return std::nullopt;  // relative to text, data or a function: not in x86_64 FDEs
  }
}

// The encoding of an FDE's range, from its CIE's augmentation ('R'); absptr where it has none.
std::optional<uint8_t> range_encoding(const Dwarf_CIE& cie, bool eh_frame) {
  if (!eh_frame || cie.augmentation == nullptr || cie.augmentation[0] != 'z') {
    return uint8_t{DW_EH_PE_absptr};
  }
  const uint8_t* data = cie.augmentation_data;
  const uint8_t* end = data + cie.augmentation_data_size;
  for (const char* letter = cie.augmentation + 1; *letter != '\0'; ++letter) {
    switch (*letter) {
      case 'R':
        if (data >= end) return std::nullopt;
        return *data;
      case 'L':
        ++data;
        break;
      case 'P': {
        if (data >= end) return std::nullopt;
        uint8_t personality = *data++;
        if (!read_encoded(personality & 0x0f, data, end, 0)) return std::nullopt;
        break;
      }
      case 'S':
      case 'B':
        break;
      default:
        return uint8_t{DW_EH_PE_absptr};
    }
  }
  return uint8_t{DW_EH_PE_absptr};
}

// Whether every instruction of a call-frame instruction stream is one a row can come from, and
// every register it names one x86_64 has (its DWARF numbers stop below 130). libdw grows a frame's
// state to the highest register an instruction names: a hostile number would cost gigabytes.
// An unsigned LEB128 number at `at`, which moves past it; false where it runs past `end` or 64
// bits.
bool read_uleb128(const uint8_t*& at, const uint8_t* end, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= end) return false;
    uint8_t byte = *at++;
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

bool instructions_are_sane(const uint8_t* at, const uint8_t* end) {
  constexpr uint64_t kMaxRegister = 129;
  auto skip = [&](uint64_t bytes) {
    if (static_cast<uint64_t>(end - at) < bytes) return false;
    at += bytes;
    return true;
  };
  uint64_t value = 0;  // signed numbers are skipped as unsigned ones: the same bytes
  auto number = [&] { return read_uleb128(at, end, value); };
  auto reg = [&] { return read_uleb128(at, end, value) && value <= kMaxRegister; };
  auto block = [&] { return read_uleb128(at, end, value) && skip(value); };
  while (at < end) {
    uint8_t op = *at++;
    if ((op >> 6) == 1 || (op >> 6) == 3) continue;  // advance_loc, restore: operands inline
    if ((op >> 6) == 2) {                            // offset: its register inline
      if (!number()) return false;
      continue;
    }
    bool sane = true;
    switch (op) {
      case DW_CFA_nop:
      case DW_CFA_remember_state:
      case DW_CFA_restore_state:
        break;
      case DW_CFA_advance_loc1:
        sane = skip(1);
        break;
      case DW_CFA_advance_loc2:
        sane = skip(2);
        break;
      case DW_CFA_advance_loc4:
        sane = skip(4);
        break;
      case DW_CFA_restore_extended:
      case DW_CFA_undefined:
      case DW_CFA_same_value:
      case DW_CFA_def_cfa_register:
        sane = reg();
        break;
      case DW_CFA_offset_extended:
      case DW_CFA_val_offset:
      case DW_CFA_def_cfa:
      case DW_CFA_offset_extended_sf:
      case DW_CFA_val_offset_sf:
      case DW_CFA_def_cfa_sf:
      case DW_CFA_GNU_negative_offset_extended:
        sane = reg() && number();
        break;
      case DW_CFA_register:
        sane = reg() && reg();
        break;
      case DW_CFA_def_cfa_offset:
      case DW_CFA_def_cfa_offset_sf:
      case DW_CFA_GNU_args_size:
        sane = number();
        break;
      case DW_CFA_def_cfa_expression:
        sane = block();
        break;
      case DW_CFA_expression:
      case DW_CFA_val_expression:
        sane = reg() && block();
        break;
      default:
        return false;  // set_loc and vendor extensions: no x86_64 compiler writes them
    }
    if (!sane) return false;
  }
  return true;
}

// What an FDE needs of its CIE.
struct CieFacts {
  std::optional<uint8_t> encoding;  // of the FDE's range; nullopt: not one we can read
  bool augmented = false;           // 'z': FDEs carry augmentation data before instructions
  bool sane = false;                // its initial instructions
};

CieFacts cie_facts(const Dwarf_CIE& cie, bool eh_frame) {
  CieFacts facts;
  facts.encoding = range_encoding(cie, eh_frame);
  facts.augmented = cie.augmentation != nullptr && cie.augmentation[0] == 'z';
  facts.sane = instructions_are_sane(cie.initial_instructions, cie.initial_instructions_end);
  return facts;
}

// Every FDE's range in a CFI section's `data` at `address`: into `fdes` those libdw may run,
// into `refused` the ranges of those it may not (their instructions or their CIE's are not sane).
void list_fdes(Elf_Data* data, const unsigned char* ident, bool eh_frame, uint64_t address,
               int source, std::vector<FdeRange>& fdes, std::vector<FdeRange>& refused,
               uint64_t& left_out) {
  const auto* begin = static_cast<const uint8_t*>(data->d_buf);
  std::vector<std::pair<Dwarf_Off, CieFacts>> cies;  // by offset
  Dwarf_Off offset = 0;
  while (fdes.size() < kMaxFdes) {
    Dwarf_Off next = 0;
    Dwarf_CFI_Entry entry;
    int read = dwarf_next_cfi(ident, data, eh_frame, offset, &next, &entry);
    if (read == 1 || next == static_cast<Dwarf_Off>(-1) || next <= offset) break;
    offset = next;
    if (read != 0) {
      ++left_out;
      continue;
    }
    if (dwarf_cfi_cie_p(&entry)) continue;
    CieFacts facts;
    auto known = std::find_if(cies.begin(), cies.end(),
                              [&](const auto& cie) { return cie.first == entry.fde.CIE_pointer; });
    if (known != cies.end()) {
      facts = known->second;
    } else {
      Dwarf_CFI_Entry cie;
      Dwarf_Off after = 0;
      if (dwarf_next_cfi(ident, data, eh_frame, entry.fde.CIE_pointer, &after, &cie) == 0 &&
          dwarf_cfi_cie_p(&cie)) {
        facts = cie_facts(cie.cie, eh_frame);
      }
      if (cies.size() < 4096) cies.emplace_back(entry.fde.CIE_pointer, facts);
    }
    const uint8_t* at = entry.fde.start;
    std::optional<uint64_t> start, size;
    if (facts.encoding) {
      start = read_encoded(*facts.encoding, at, entry.fde.end,
                           address + static_cast<uint64_t>(at - begin));
      size = read_encoded(*facts.encoding & 0x0f, at, entry.fde.end, 0);
    }
    bool range = start && size && *size != 0 && *start + *size > *start;
    uint64_t augmentation = 0;  // its length, then the data: skipped
    bool augmentation_read = !facts.augmented || read_uleb128(at, entry.fde.end, augmentation);
    bool sane = range && facts.sane && augmentation_read &&
                augmentation <= static_cast<uint64_t>(entry.fde.end - at) &&
                instructions_are_sane(at + augmentation, entry.fde.end);
    if (!sane) {
      ++left_out;
      if (range) refused.push_back({*start, *start + *size, source});
      continue;
    }
    fdes.push_back({*start, *start + *size, source});
  }
}

bool is_cfa_plus(const Dwarf_Op* ops, size_t count, int64_t& offset) {
  if (count == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
    offset = 0;
    return true;
  }
  if (count == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
    offset = static_cast<int64_t>(ops[1].number);
    return true;
  }
  return false;
}

// The expression GNU ld writes for a lazy-binding PLT: sp + N + ((ip & 15) >= K) << 3.
bool is_plt_expression(const Dwarf_Op* ops, size_t count, int64_t& offset, int& threshold) {
  if (count != 9 || ops[0].atom != DW_OP_breg7 || ops[1].atom != DW_OP_breg16 ||
      ops[1].number != 0 || ops[2].atom != DW_OP_lit15 || ops[3].atom != DW_OP_and ||
      ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 || ops[5].atom != DW_OP_ge ||
      ops[6].atom != DW_OP_lit3 || ops[7].atom != DW_OP_shl || ops[8].atom != DW_OP_plus) {
    return false;
  }
  offset = static_cast<int64_t>(ops[0].number);
  threshold = ops[4].atom - DW_OP_lit0;
  return true;
}

dormant_unwind_row none_row(uint32_t pc) {
  return {pc, 0, 0, DORMANT_UNWIND_ROW_KINDS(DORMANT_CFA_NONE, DORMANT_FP_LOST)};
}

// The row for the frame state `frame`, whose range starts at `pc`.
dormant_unwind_row row_of(Dwarf_Frame* frame, uint32_t pc) {
  bool signal = false;
  int return_register = dwarf_frame_info(frame, nullptr, nullptr, &signal);
  if (signal) return {pc, 0, 0, DORMANT_UNWIND_ROW_KINDS(DORMANT_CFA_SIGNAL, DORMANT_FP_LOST)};
  if (return_register != kReturnAddress) return none_row(pc);

  Dwarf_Op memory[3];
  Dwarf_Op* ops = nullptr;
  size_t count = 0;
  if (dwarf_frame_register(frame, kReturnAddress, memory, &ops, &count) != 0) return none_row(pc);
  if (count == 0 && ops == memory) {  // undefined: no caller
    return {pc, 0, 0, DORMANT_UNWIND_ROW_KINDS(DORMANT_CFA_END, DORMANT_FP_LOST)};
  }
  int64_t return_offset = 0;
  if (!is_cfa_plus(ops, count, return_offset) || return_offset != -8) return none_row(pc);

  int cfa_kind = DORMANT_CFA_NONE;
  int64_t cfa_offset = 0;
  int plt_threshold = 0;
  if (dwarf_frame_cfa(frame, &ops, &count) != 0) return none_row(pc);
  int cfa_register = -1;
  if (count == 1 && ops[0].atom == DW_OP_bregx) {  // how libdw gives a register + offset rule
    cfa_register = static_cast<int>(ops[0].number);
    cfa_offset = static_cast<int64_t>(ops[0].number2);
  } else if (count == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
    cfa_register = ops[0].atom - DW_OP_breg0;
    cfa_offset = static_cast<int64_t>(ops[0].number);
  }
  if (cfa_register == kRsp || cfa_register == kRbp) {
    cfa_kind = cfa_register == kRsp ? DORMANT_CFA_SP : DORMANT_CFA_FP;
  } else if (is_plt_expression(ops, count, cfa_offset, plt_threshold)) {
    cfa_kind = DORMANT_CFA_PLT;
  }
  if (cfa_kind == DORMANT_CFA_NONE || cfa_offset < 0 || cfa_offset % 8 != 0 ||
      cfa_offset / 8 > UINT16_MAX) {
    return none_row(pc);
  }
  dormant_unwind_row row{pc, static_cast<uint16_t>(cfa_offset / 8), 0, 0};
  if (cfa_kind == DORMANT_CFA_PLT) {
    row.fp_offset = static_cast<int8_t>(plt_threshold);
    row.kinds = DORMANT_UNWIND_ROW_KINDS(cfa_kind, DORMANT_FP_SAME);
    return row;
  }
  int fp_kind = DORMANT_FP_LOST;
  int64_t fp_offset = 0;
  if (dwarf_frame_register(frame, kRbp, memory, &ops, &count) == 0) {
    if (count == 0 && ops == nullptr) {
      fp_kind = DORMANT_FP_SAME;
    } else if (is_cfa_plus(ops, count, fp_offset) && fp_offset % 8 == 0 &&
               fp_offset / 8 >= INT8_MIN && fp_offset / 8 <= INT8_MAX) {
      fp_kind = DORMANT_FP_AT_CFA;
      row.fp_offset = static_cast<int8_t>(fp_offset / 8);
    }
  }
  row.kinds = DORMANT_UNWIND_ROW_KINDS(cfa_kind, fp_kind);
  return row;
}

bool same_rule(const dormant_unwind_row& a, const dormant_unwind_row& b) {
  return a.cfa_offset == b.cfa_offset && a.fp_offset == b.fp_offset && a.kinds == b.kinds;
}

}  // namespace

// Builds a table from an open ELF.
class UnwindTableReader {
 public:
  UnwindTableReader(const UnwindTableLimits& limits, std::string name)
      : limits_(limits), name_(std::move(name)) {}

  Result<UnwindTable> read(Elf* elf) {
    if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return Error::parse(name_ + " is not ELF");
    GElf_Ehdr header;
    if (gelf_getehdr(elf, &header) == nullptr) return Error::parse(name_ + ": no ELF header");
    if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_machine != EM_X86_64) {
      return Error(ErrorKind::kUnavailable,
                   name_ + " is not an x86_64 ELF file: no unwind table for it");
    }
    auto segments = LoadSegments::of(elf, name_);
    if (!segments) return segments.error();
    table_.segments_ = std::move(*segments);
    const uint64_t base = table_.segments_.base();

    std::vector<FdeRange> fdes;
    std::unique_ptr<Dwarf_CFI, CfiCloser> eh_frame(dwarf_getcfi_elf(elf));
    if (eh_frame) add_fdes(elf, ".eh_frame", true, 0, fdes);
    std::unique_ptr<Dwarf, DwarfCloser> dwarf;
    Dwarf_CFI* debug_frame = nullptr;
    if (has_section(elf, ".debug_frame")) {
      dwarf.reset(dwarf_begin_elf(elf, DWARF_C_READ, nullptr));
      if (dwarf) debug_frame = dwarf_getcfi(dwarf.get());
      if (debug_frame) add_fdes(elf, ".debug_frame", false, 1, fdes);
    }
    if (fdes.empty()) {
      return Error(ErrorKind::kUnavailable, name_ + " has no call-frame information");
    }
    // An address two FDEs claim is read from the first: .eh_frame's, then the lower start.
    std::sort(fdes.begin(), fdes.end(), [](const FdeRange& a, const FdeRange& b) {
      return a.start != b.start ? a.start < b.start : a.source < b.source;
    });
    Dwarf_CFI* sources[] = {eh_frame.get(), debug_frame};
    uint64_t covered_to = 0;
    for (size_t i = 0; i < fdes.size(); ++i) {
      const FdeRange& fde = fdes[i];
      if (fde.start < covered_to || fde.start < base || fde.end - base > UINT32_MAX) {
        ++table_.fdes_left_out_;
        continue;
      }
      if (auto added = add_rows(sources[fde.source], fde); !added) return added.error();
      ++table_.fdes_;
      covered_to = fde.end;
      bool next_adjoins = i + 1 < fdes.size() && fdes[i + 1].start == fde.end;
      if (!next_adjoins) push(none_row(static_cast<uint32_t>(fde.end - base)));
    }
    table_.rows_.shrink_to_fit();
    return std::move(table_);
  }

 private:
  static bool has_section(Elf* elf, const char* wanted) {
    GElf_Shdr header;
    return find_section(elf, wanted, header) != nullptr;
  }

  void add_fdes(Elf* elf, const char* section_name, bool eh_frame, int source,
                std::vector<FdeRange>& fdes) {
    GElf_Shdr header;
    Elf_Scn* section = find_section(elf, section_name, header);
    if (section == nullptr || header.sh_type == SHT_NOBITS) return;
    if ((header.sh_flags & SHF_COMPRESSED) != 0) {
      GElf_Chdr compressed;
      if (gelf_getchdr(section, &compressed) == nullptr ||
          compressed.ch_size > limits_.max_file_bytes || elf_compress(section, 0, 0) != 1) {
        return;
      }
    }
    Elf_Data* data = elf_getdata(section, nullptr);
    if (data == nullptr || data->d_buf == nullptr) return;
    const char* ident = elf_getident(elf, nullptr);
    if (ident == nullptr) return;
    std::vector<FdeRange> listed, refused;
    list_fdes(data, reinterpret_cast<const unsigned char*>(ident), eh_frame, header.sh_addr, source,
              listed, refused, table_.fdes_left_out_);
    // libdw finds an address's FDE itself: where a refused one covers the address too, it may
    // run that one's instructions. Sane FDEs overlapping a refused one are left out.
    std::sort(refused.begin(), refused.end(),
              [](const FdeRange& a, const FdeRange& b) { return a.start < b.start; });
    std::vector<uint64_t> furthest_end(refused.size());  // of refused[0..i]
    for (size_t i = 0; i < refused.size(); ++i) {
      furthest_end[i] = std::max(refused[i].end, i > 0 ? furthest_end[i - 1] : 0);
    }
    for (const FdeRange& fde : listed) {
      auto after =
          std::lower_bound(refused.begin(), refused.end(), fde.end,
                           [](const FdeRange& range, uint64_t end) { return range.start < end; });
      size_t before = static_cast<size_t>(after - refused.begin());
      if (before > 0 && furthest_end[before - 1] > fde.start) {
        ++table_.fdes_left_out_;
      } else {
        fdes.push_back(fde);
      }
    }
  }

  void push(dormant_unwind_row row) {
    auto& rows = table_.rows_;
    if (!rows.empty() && rows.back().pc == row.pc) {
      rows.back() = row;
      if (rows.size() >= 2 && same_rule(rows[rows.size() - 2], row)) rows.pop_back();
      return;
    }
    if (!rows.empty() && same_rule(rows.back(), row)) return;
    rows.push_back(row);
  }

  Result<void> add_rows(Dwarf_CFI* cfi, const FdeRange& fde) {
    uint64_t address = fde.start;
    for (uint64_t row_in_fde = 1; address < fde.end; ++row_in_fde) {
      steps_ += row_in_fde;
      if (limits_.cancel != nullptr && (steps_ & 0xfff) < row_in_fde &&
          limits_.cancel->load(std::memory_order_relaxed)) {
        return Error(ErrorKind::kUnavailable, name_ + ": reading its unwind table was cancelled");
      }
      if (steps_ > limits_.max_steps) {
        return Error::parse(name_ + ": its call-frame information takes more than " +
                            std::to_string(limits_.max_steps) + " steps to read");
      }
      if (table_.rows_.size() >= limits_.max_rows) {
        return Error::parse(name_ + " has more than " + std::to_string(limits_.max_rows) +
                            " unwind rows");
      }
      auto pc = static_cast<uint32_t>(address - table_.segments_.base());
      Dwarf_Frame* raw = nullptr;
      if (dwarf_cfi_addrframe(cfi, address, &raw) != 0) {
        push(none_row(pc));
        return ok();
      }
      std::unique_ptr<Dwarf_Frame, FrameFree> frame(raw);
      Dwarf_Addr start = 0, end = 0;
      dwarf_frame_info(frame.get(), &start, &end, nullptr);
      push(row_of(frame.get(), pc));
      if (end <= address) return ok();  // a range that does not move on: the rest is the same
      address = end;
    }
    return ok();
  }

  UnwindTableLimits limits_;
  std::string name_;
  UnwindTable table_;
  uint64_t steps_ = 0;
};

Result<UnwindTable> UnwindTable::read(const std::filesystem::path& path,
                                      const UnwindTableLimits& limits) {
  const std::string name = path.string();
  ElfFileLimits file_limits;
  file_limits.max_bytes = limits.max_file_bytes;
  file_limits.max_program_headers = kMaxProgramHeaders;
  auto file = open_elf_file(path, name, "it gets no unwind table", file_limits);
  if (!file) return file.error();
  try {
    return UnwindTableReader(limits, name).read(file->elf.get());
  } catch (const std::bad_alloc&) {
    return Error::parse(name + ": out of memory reading its unwind table");
  }
}

Result<UnwindTable> UnwindTable::read_image(std::span<const std::byte> image,
                                            const std::string& name,
                                            const UnwindTableLimits& limits) {
  auto file = open_elf_image(image, name);
  if (!file) return file.error();
  try {
    return UnwindTableReader(limits, name).read(file->elf.get());
  } catch (const std::bad_alloc&) {
    return Error::parse(name + ": out of memory reading its unwind table");
  }
}

Result<LoadSegments> LoadSegments::of(Elf* elf, const std::string& name) {
  size_t headers = 0;
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) return Error::parse(name + " is not ELF");
  if (elf_getphdrnum(elf, &headers) != 0 || headers > kMaxProgramHeaders) {
    return Error::parse(name + ": unreadable program headers");
  }
  LoadSegments segments;
  for (size_t i = 0; i < headers; ++i) {
    GElf_Phdr header;
    if (gelf_getphdr(elf, static_cast<int>(i), &header) == nullptr) continue;
    if (header.p_type != PT_LOAD) continue;
    segments.base_ =
        segments.segments_.empty() ? header.p_vaddr : std::min(segments.base_, header.p_vaddr);
    segments.segments_.push_back({header.p_offset, header.p_vaddr, header.p_filesz});
  }
  if (segments.segments_.empty()) return Error::parse(name + " has no load segment");
  return segments;
}

Result<LoadSegments> LoadSegments::read(const std::filesystem::path& path,
                                        const std::string& name) {
  ElfFileLimits limits;
  limits.max_program_headers = kMaxProgramHeaders;
  auto file = open_elf_file(path, name, "its load segments are not read", limits);
  if (!file) return file.error();
  return of(file->elf.get(), name);
}

Result<LoadSegments> LoadSegments::read_image(std::span<const std::byte> image,
                                              const std::string& name) {
  auto file = open_elf_image(image, name);
  if (!file) return file.error();
  return of(file->elf.get(), name);
}

std::optional<uint64_t> LoadSegments::file_offset(uint64_t address, uint64_t size) const {
  for (const Segment& segment : segments_) {
    if (address < segment.address || address + size > segment.address + segment.size) continue;
    return address - segment.address + segment.offset;
  }
  return std::nullopt;
}

std::optional<uint64_t> LoadSegments::bias(uint64_t start, uint64_t offset) const {
  constexpr uint64_t kPage = 4096;
  for (const Segment& segment : segments_) {
    uint64_t first = segment.offset & ~(kPage - 1);
    if (offset < first || offset >= segment.offset + segment.size) continue;
    // The address in the file of the mapping's first byte.
    uint64_t address = offset - segment.offset + segment.address;
    return start - address + base_;
  }
  return std::nullopt;
}

}  // namespace dormant::profilers::system
