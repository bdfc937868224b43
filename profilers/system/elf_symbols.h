// The function symbols of one ELF file (executable or shared library), from .symtab or, when it
// was stripped, .dynsym (libelf), with the load segments that turn a file offset into the
// address the symbols use. C++ names come out demangled.
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

namespace dormant::profilers::system {

class ElfSymbols {
 public:
  // Reads `path` (which may be a /proc/PID/map_files or /proc/PID/root path).
  static Result<std::unique_ptr<ElfSymbols>> load(const std::filesystem::path& path);

  // The function at `file_offset`, an offset into the file as /proc/PID/maps gives it
  // (address - mapping start + mapping offset); nullopt where no symbol covers it.
  std::optional<std::string_view> function_at_file_offset(uint64_t file_offset);

  const std::string& build_id() const { return build_id_; }  // hex; empty when it has none
  size_t size() const { return symbols_.size(); }
  bool from_dynsym() const { return from_dynsym_; }

 private:
  struct Segment {
    uint64_t offset;
    uint64_t address;
    uint64_t size;
  };
  struct Symbol {
    uint64_t address;
    uint64_t size;  // 0: up to the next symbol
    uint32_t name_offset;
    uint32_t name_length;
  };
  std::vector<Segment> segments_;  // PT_LOAD, executable or not
  std::vector<Symbol> symbols_;    // by address
  std::string names_;
  std::unordered_map<uint32_t, std::string> demangled_;  // by name_offset
  std::string build_id_;
  bool from_dynsym_ = false;
};

}  // namespace dormant::profilers::system
