#include "profilers/perf/perf_script_parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

namespace dormant::profilers::perf {
namespace {

constexpr size_t kMaxFrameLength = 4096;
constexpr size_t kMaxMalformedExample = 200;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr std::array<bool, 256> kHexDigits = [] {
  std::array<bool, 256> table{};
  for (char c : std::string_view("0123456789abcdefABCDEF"))
    table[static_cast<unsigned char>(c)] = true;
  return table;
}();
bool is_hex_digit(char c) { return kHexDigits[static_cast<unsigned char>(c)]; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && (is_space(text.back()) || text.back() == '\r')) text.remove_suffix(1);
  return text;
}

bool parse_number(std::string_view text, int& value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// After "pid/tid": optional " [cpu]", then " seconds.fraction:".
bool timestamp_follows(std::string_view rest) {
  rest = trim(rest);
  if (rest.starts_with('[')) {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return false;
    rest = trim(rest.substr(close + 1));
  }
  size_t i = 0;
  while (i < rest.size() && is_digit(rest[i])) ++i;
  if (i == 0 || i >= rest.size() || rest[i] != '.') return false;
  size_t fraction = ++i;
  while (i < rest.size() && is_digit(rest[i])) ++i;
  return i > fraction && i < rest.size() && rest[i] == ':';
}

// The dso is the last balanced "(...)" at the end of the line; symbols and paths may hold
// parentheses themselves ("(anonymous namespace)::f", "/lib/x.so (deleted)").
bool split_symbol_and_dso(std::string_view rest, std::string_view& symbol, std::string_view& dso) {
  if (rest.empty() || rest.back() != ')') {
    symbol = rest;
    dso = {};
    return true;
  }
  auto split_at = [&](size_t open) {
    dso = rest.substr(open + 1, rest.size() - open - 2);
    symbol = trim(rest.substr(0, open));
    return true;
  };
  // Usually the dso holds no parenthesis: its '(' is the last one.
  const void* last_open = ::memrchr(rest.data(), '(', rest.size() - 1);
  if (last_open == nullptr) return false;
  size_t open = static_cast<size_t>(static_cast<const char*>(last_open) - rest.data());
  if (std::memchr(rest.data() + open, ')', rest.size() - 1 - open) == nullptr)
    return split_at(open);
  int depth = 0;
  for (size_t i = rest.size(); i-- > 0;) {
    if (rest[i] == ')') ++depth;
    if (rest[i] == '(' && --depth == 0) return split_at(i);
  }
  return false;
}

// "name+0x1f" → "name"; only a trailing "+0x<hex>" is an offset ("operator+" keeps its '+').
std::string_view strip_offset(std::string_view symbol) {
  size_t end = symbol.size();
  while (end > 0 && is_hex_digit(symbol[end - 1])) --end;
  if (end == symbol.size() || end < 3 || symbol.substr(end - 3, 3) != "+0x") return symbol;
  return symbol.substr(0, end - 3);
}

bool is_kernel_dso(std::string_view dso) {
  return dso == "[kernel.kallsyms]" || dso == "[guest.kernel.kallsyms]" ||
         dso.ends_with("vmlinux") || dso.ends_with(".ko") || dso.ends_with(".ko.xz") ||
         dso.ends_with(".ko.zst");
}

}  // namespace

std::optional<SampleHeader> parse_sample_header(std::string_view line) {
  for (size_t slash = line.find('/'); slash != std::string_view::npos;
       slash = line.find('/', slash + 1)) {
    size_t pid_begin = slash;
    while (pid_begin > 0 && (is_digit(line[pid_begin - 1]) || line[pid_begin - 1] == '-')) {
      --pid_begin;
    }
    size_t tid_end = slash + 1;
    while (tid_end < line.size() && (is_digit(line[tid_end]) || line[tid_end] == '-')) ++tid_end;
    if (pid_begin == 0 || !is_space(line[pid_begin - 1]) || pid_begin == slash ||
        tid_end == slash + 1 || (tid_end < line.size() && !is_space(line[tid_end]))) {
      continue;
    }
    SampleHeader header;
    if (!parse_number(line.substr(pid_begin, slash - pid_begin), header.pid) ||
        !parse_number(line.substr(slash + 1, tid_end - slash - 1), header.tid) ||
        !timestamp_follows(line.substr(tid_end))) {
      continue;
    }
    header.comm = trim(line.substr(0, pid_begin));
    return header;
  }
  return std::nullopt;
}

bool parse_frame(std::string_view line, std::string& scratch, std::string_view& name) {
  line = trim(line);
  size_t space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return false;
  for (size_t i = 0; i < space; ++i) {
    if (!is_hex_digit(line[i])) return false;
  }
  std::string_view symbol, dso;
  if (!split_symbol_and_dso(trim(line.substr(space + 1)), symbol, dso)) return false;
  symbol = strip_offset(symbol);

  if (symbol.empty() || symbol == "[unknown]") {
    bool bracketed = dso.size() >= 2 && dso.front() == '[' && dso.back() == ']';
    std::string_view dso_name = bracketed ? dso.substr(1, dso.size() - 2) : dso;
    if (dso_name.empty() || dso_name == "unknown") {
      name = "[unknown]";
      return true;
    }
    scratch.assign("(").append(dso_name).append(")");
  } else if (symbol.size() > kMaxFrameLength) {
    scratch.assign(symbol.substr(0, kMaxFrameLength)).append("...");
  } else if (is_kernel_dso(dso)) {
    scratch.assign(symbol).append("_[k]");
  } else {
    name = symbol;  // the common case: a view into the line, no copy
    return true;
  }
  if (is_kernel_dso(dso) && symbol.size() > kMaxFrameLength) scratch.append("_[k]");
  name = scratch;
  return true;
}

bool parse_frame(std::string_view line, std::string& name) {
  std::string scratch;
  std::string_view view;
  if (!parse_frame(line, scratch, view)) return false;
  name.assign(view);
  return true;
}

PerfScriptParser::PerfScriptParser(profile::StackTable& table)
    : table_for_pid_([&table](int) -> profile::StackTable& { return table; }) {}

PerfScriptParser::PerfScriptParser(TableForPid table_for_pid)
    : table_for_pid_(std::move(table_for_pid)) {}

void PerfScriptParser::feed(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) {
    end_sample();
    return;
  }
  // Frames start with a tab; headers start with the comm, which perf pads with spaces when the
  // sample has no call chain.
  if (line.front() == '\t') return add_frame(line);
  if (line.front() == '#') return;  // perf's own comments
  auto header = parse_sample_header(line);
  if (!header) {
    if (is_space(line.front())) return add_frame(line);
    return malformed(line);
  }
  end_sample();  // a header without a blank line before it
  begin_sample(*header);
}

void PerfScriptParser::add_frame(std::string_view line) {
  std::string_view name;
  if (current_ == nullptr || !parse_frame(line, frame_, name)) return malformed(line);
  key_.push_back(current_->intern(name));
}

void PerfScriptParser::finish() { end_sample(); }

void PerfScriptParser::begin_sample(const SampleHeader& header) {
  current_ = &table_for_pid_(header.pid);
  key_.clear();
  key_.push_back(current_->intern(""));  // container: not known from perf's text
  key_.push_back(current_->intern(header.comm));
}

void PerfScriptParser::end_sample() {
  if (current_ == nullptr) return;
  if (key_.size() == 2) ++stats_.empty_stacks;
  std::reverse(key_.begin() + 2, key_.end());  // perf prints the leaf first
  current_->add_interned(key_, 1);
  ++stats_.samples;
  current_ = nullptr;
}

void PerfScriptParser::malformed(std::string_view line) {
  if (stats_.malformed_lines++ == 0) {
    stats_.first_malformed_line = std::string(line.substr(0, kMaxMalformedExample));
  }
}

}  // namespace dormant::profilers::perf
