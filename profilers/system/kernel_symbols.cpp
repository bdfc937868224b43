#include "profilers/system/kernel_symbols.h"

#include <algorithm>
#include <charconv>

#include <fcntl.h>

#include "common/line_reader.h"
#include "common/unique_fd.h"

namespace dormant::profilers::system {
namespace {

// Text symbols: t/T functions, w/W weak ones (kallsyms lists data too).
bool is_function(char type) { return type == 't' || type == 'T' || type == 'w' || type == 'W'; }

// Room for a large kernel's table (the 6.18 kernel of our CI machines lists about 120,000
// functions, 3 MB of names): nothing is copied as the table grows, and the room it leaves unused
// is never written to.
constexpr size_t kExpectedSymbols = 256 * 1024;
constexpr size_t kExpectedNameBytes = 8 * 1024 * 1024;

}  // namespace

Result<KernelSymbols> KernelSymbols::load(const std::filesystem::path& kallsyms) {
  UniqueFd fd(::open(kallsyms.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno("open(" + kallsyms.string() + ")");
  LineReader reader(fd.get());
  KernelSymbols table;
  table.symbols_.reserve(kExpectedSymbols);
  table.names_.reserve(kExpectedNameBytes);
  bool any_address = false;
  for (;;) {
    auto line = reader.next();
    if (!line) return Error(line.error()).with_context("reading " + kallsyms.string());
    if (!*line) break;
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t name\t[module]"
    std::string_view text = **line;
    const char* end = text.data() + text.size();
    uint64_t address = 0;
    auto parsed = std::from_chars(text.data(), end, address, 16);
    if (parsed.ec != std::errc() || end - parsed.ptr < 4 || parsed.ptr[0] != ' ' ||
        !is_function(parsed.ptr[1]) || parsed.ptr[2] != ' ') {
      continue;
    }
    const char* name_begin = parsed.ptr + 3;
    const char* name_end = name_begin;
    while (name_end != end && *name_end != '\t' && *name_end != ' ') ++name_end;
    std::string_view name(name_begin, static_cast<size_t>(name_end - name_begin));
    if (name.empty()) continue;
    any_address |= address != 0;
    table.symbols_.push_back(
        {address, static_cast<uint32_t>(table.names_.size()), static_cast<uint32_t>(name.size())});
    table.names_.append(name);
  }
  if (!any_address) {
    return Error(ErrorKind::kUnavailable,
                 kallsyms.string() +
                     " shows no kernel addresses (kernel.kptr_restrict hides them "
                     "from this process)");
  }
  // The kernel lists its own functions by address; modules, BPF programs and trampolines follow,
  // in no order. Sorting that tail and merging it in keeps the kernel's part as it is.
  auto by_address = [](const Symbol& a, const Symbol& b) { return a.address < b.address; };
  auto& symbols = table.symbols_;
  auto tail = std::is_sorted_until(symbols.begin(), symbols.end(), by_address);
  std::stable_sort(tail, symbols.end(), by_address);
  std::inplace_merge(symbols.begin(), tail, symbols.end(), by_address);
  return table;
}

std::optional<std::string_view> KernelSymbols::function_at(uint64_t address) const {
  auto after = std::upper_bound(
      symbols_.begin(), symbols_.end(), address,
      [](uint64_t wanted, const Symbol& symbol) { return wanted < symbol.address; });
  if (after == symbols_.begin()) return std::nullopt;
  const Symbol& symbol = *std::prev(after);
  return std::string_view(names_).substr(symbol.name_offset, symbol.name_length);
}

}  // namespace dormant::profilers::system
