// The kernel's function symbols from /proc/kallsyms, sorted once and searched by address.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dormant::profilers::system {

class KernelSymbols {
 public:
  // Fails when the file cannot be read, or when every address reads 0 (kernel.kptr_restrict
  // hides them from this process).
  static Result<KernelSymbols> load(const std::filesystem::path& kallsyms = "/proc/kallsyms");

  // The function that holds `address`, or nullopt below the first symbol.
  std::optional<std::string_view> function_at(uint64_t address) const;
  size_t size() const { return symbols_.size(); }

 private:
  struct Symbol {
    uint64_t address;
    uint32_t name_offset;
    uint32_t name_length;
  };
  std::vector<Symbol> symbols_;  // by address
  std::string names_;
};

}  // namespace dormant::profilers::system
