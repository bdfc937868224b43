#include "profilers/perf/perf_script_parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace dormant::profilers::perf {
namespace {

constexpr size_t kMaxFrameLength = 4096;
constexpr size_t kMaxMalformedExample = 200;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
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
  int depth = 0;
  for (size_t i = rest.size(); i-- > 0;) {
    if (rest[i] == ')') ++depth;
    if (rest[i] == '(' && --depth == 0) {
      dso = rest.substr(i + 1, rest.size() - i - 2);
      symbol = trim(rest.substr(0, i));
      return true;
    }
  }
  return false;
}

std::string_view strip_offset(std::string_view symbol) {
  size_t plus = symbol.rfind("+0x");
  if (plus == std::string_view::npos || plus + 3 == symbol.size()) return symbol;
  for (size_t i = plus + 3; i < symbol.size(); ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(symbol[i]))) return symbol;
  }
  return symbol.substr(0, plus);
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

bool parse_frame(std::string_view line, std::string& name) {
  line = trim(line);
  size_t space = line.find(' ');
  if (space == 0 || space == std::string_view::npos) return false;
  for (size_t i = 0; i < space; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(line[i]))) return false;
  }
  std::string_view symbol, dso;
  if (!split_symbol_and_dso(trim(line.substr(space + 1)), symbol, dso)) return false;
  symbol = strip_offset(symbol);

  bool bracketed = dso.size() >= 2 && dso.front() == '[' && dso.back() == ']';
  std::string_view dso_name = bracketed ? dso.substr(1, dso.size() - 2) : dso;
  name.clear();
  if (symbol.empty() || symbol == "[unknown]") {
    if (dso_name.empty() || dso_name == "unknown") {
      name = "[unknown]";
    } else {
      name.append("(").append(dso_name).append(")");
    }
  } else {
    name.append(symbol.substr(0, kMaxFrameLength));
    if (symbol.size() > kMaxFrameLength) name.append("...");
    if (is_kernel_dso(dso)) name.append("_[k]");
  }
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
  if (current_ == nullptr || !parse_frame(line, frame_)) return malformed(line);
  key_.push_back(current_->intern(frame_));
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
