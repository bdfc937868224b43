// The function symbols of one ELF file (executable or shared library), from .symtab or, when it
// was stripped, .dynsym (libelf), with the load segments that turn a file offset into the
// address the symbols use. C++ names come out demangled.
//
// The files are other users' (anything a process maps executable): what one may cost is bounded
// (kMax* below), and a file past a bound is refused as a whole, its frames left unnamed. Names are
// kept as the file's string table holds them, however many symbols share one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "profilers/system/elf_file.h"

namespace dormant::profilers::system {

// Where a stripped file's separate debug file may be, as gdb and perf look: under `root`,
// .build-id/xx/rest.debug; and the file its .gnu_debuglink names, beside `binary`, in .debug/
// there, and under `root` by the binary's directory. Only a debug file of the same build id counts.
struct DebugFileSearch {
  std::filesystem::path root = "/usr/lib/debug";
  std::filesystem::path binary;  // the binary as its process names it; empty: no debug link
};

class ElfSymbols {
 public:
  static constexpr size_t kMaxNameBytes = 4096;       // a longer name is cut
  static constexpr size_t kMaxNamesBytes = 64 << 20;  // the string table of the symbols
  static constexpr size_t kMaxSymbols = 4 << 20;      // symbol table entries
  static constexpr size_t kMaxSections = 1 << 16;     // section headers
  static constexpr size_t kMaxProgramHeaders = 1 << 16;
  static constexpr size_t kMaxBuildIdNoteBytes = 64 << 10;
  static constexpr size_t kMaxDemangledBytes = 16 << 20;      // names looked up: then forgotten
  static constexpr size_t kMaxMiniDebugInfoBytes = 64 << 20;  // .gnu_debugdata, decompressed

  // Reads `path` (which may be a /proc/PID/map_files or /proc/PID/root path); where it has no
  // .symtab, the .symtab of its separate debug file, if `debug` finds one. Each table is read
  // only once `grant` allows what reading it costs: a .symtab refused falls back to .dynsym.
  static Result<std::unique_ptr<ElfSymbols>> load(const std::filesystem::path& path,
                                                  const DebugFileSearch& debug = {},
                                                  const MemoryGrant& grant = {});

  // The function at `file_offset`, an offset into the file as /proc/PID/maps gives it
  // (address - mapping start + mapping offset); nullopt where no symbol covers it. The view is
  // valid until the next call.
  std::optional<std::string_view> function_at_file_offset(uint64_t file_offset);

  const std::string& build_id() const { return build_id_; }  // hex; empty when it has none
  size_t size() const { return symbols_.size(); }
  bool from_dynsym() const { return from_dynsym_; }
  // The separate debug file the symbols came from; empty: the file itself.
  const std::filesystem::path& debug_file() const { return debug_file_; }
  bool with_mini_debug_info() const { return with_mini_debug_info_; }
  // The heap this object holds, demangled names looked up so far included.
  size_t memory_bytes() const;

 private:
  struct Segment {
    uint64_t offset;
    uint64_t address;
    uint64_t size;
  };
  struct Symbol {
    uint64_t address;
    uint64_t size;         // 0: up to the next symbol
    uint32_t name_offset;  // in names_
    uint32_t name_length;  // at most kMaxNameBytes
  };
  ElfSymbols() = default;
  // Reads the symbols of `table` (SHT_SYMTAB or SHT_DYNSYM) and its string table, once `grant`
  // allows it.
  Result<void> read_table(Elf* elf, Elf_Scn* table, int fd, uint64_t file_size,
                          const std::string& name, const MemoryGrant& grant);
  // Replaces .dynsym's symbols with the .symtab of the file's separate debug file, if found.
  void read_debug_file(Elf* elf, const DebugFileSearch& search, const MemoryGrant& grant);
  // Adds to .dynsym's symbols the functions of the file's MiniDebugInfo (.gnu_debugdata: an
  // xz-compressed ELF whose .symtab holds the functions .dynsym lacks), if it has one.
  void add_mini_debug_info(Elf* elf, const std::string& name, const MemoryGrant& grant);

  std::vector<Segment> segments_;  // PT_LOAD, executable or not
  std::vector<Symbol> symbols_;    // by address
  std::string names_;              // the string table of symbols_, as the file holds it
  size_t demangled_bytes_ = 0;
  std::unordered_map<uint32_t, std::string> demangled_;  // by name_offset
  std::string build_id_;
  bool from_dynsym_ = false;
  std::filesystem::path debug_file_;
  bool with_mini_debug_info_ = false;
};

}  // namespace dormant::profilers::system
