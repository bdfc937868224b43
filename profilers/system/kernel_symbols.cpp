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

}  // namespace

Result<KernelSymbols> KernelSymbols::load(const std::filesystem::path& kallsyms) {
  UniqueFd fd(::open(kallsyms.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return Error::from_errno("open(" + kallsyms.string() + ")");
  LineReader reader(fd.get());
  KernelSymbols table;
  bool any_address = false;
  for (;;) {
    auto line = reader.next();
    if (!line) return Error(line.error()).with_context("reading " + kallsyms.string());
    if (!*line) break;
    // "ffffffff81000000 T _stext" or "ffffffffc0a01000 t name\t[module]"
    std::string_view text = **line;
    size_t first_space = text.find(' ');
    if (first_space == std::string_view::npos || first_space + 3 >= text.size()) continue;
    if (!is_function(text[first_space + 1]) || text[first_space + 2] != ' ') continue;
    uint64_t address = 0;
    auto parsed = std::from_chars(text.data(), text.data() + first_space, address, 16);
    if (parsed.ec != std::errc() || parsed.ptr != text.data() + first_space) continue;
    std::string_view name = text.substr(first_space + 3);
    name = name.substr(0, name.find_first_of("\t "));
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
  std::stable_sort(table.symbols_.begin(), table.symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.address < b.address; });
  table.symbols_.shrink_to_fit();
  table.names_.shrink_to_fit();
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
