#include "profilers/perf/perf_script_parser.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/text.h"

namespace dormant::profilers::perf {
namespace {

constexpr size_t kMaxFrameLength = 4096;
constexpr size_t kMaxMalformedExample = 200;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// Printable characters, the common case, fail the first comparison.
bool is_space(char c) { return static_cast<unsigned char>(c) <= ' ' && (c == ' ' || c == '\t'); }

// Scanning sixteen bytes at a time, with the compiler's vector extension (SSE2 on x86-64, NEON
// on arm64). A byte class marks the bytes that belong to it: in a vector of sixteen, as 0xff;
// as a single byte, as anything but 0. Bytes are unsigned, so a byte below a range's low end
// wraps around above it, and one comparison checks both ends of the range.
using Bytes = uint8_t __attribute__((vector_size(16)));
constexpr size_t kBytes = sizeof(Bytes);

struct Blank {
  template <typename B>
  static B marks(B bytes) {
    return (bytes == ' ') | (bytes == '\t');
  }
};
struct HexDigit {
  template <typename B>
  static B marks(B bytes) {
    B lower = bytes | 0x20;
    return (B(bytes - '0') <= 9) | (B(lower - 'a') <= 'f' - 'a');
  }
};
struct Parenthesis {
  template <typename B>
  static B marks(B bytes) {
    return (bytes | 1) == ')';  // '(' is 0x28, ')' 0x29
  }
};

template <typename Class>
bool belongs(char c) {
  return Class::marks(static_cast<uint8_t>(c)) != 0;
}

Bytes load_bytes(const char* data) {
  Bytes bytes;
  std::memcpy(&bytes, data, kBytes);
  return bytes;
}

// Bit i set where byte i of `marks` is set.
uint32_t mark_bits(Bytes marks) {
#if defined(__SSE2__)
  return static_cast<uint32_t>(_mm_movemask_epi8(reinterpret_cast<__m128i>(marks)));
#else
  uint32_t bits = 0;
  for (size_t i = 0; i < kBytes; ++i) bits |= (marks[i] & 1u) << i;
  return bits;
#endif
}

// How many bytes at the start of `text` belong to `Class`.
template <typename Class>
size_t leading_run(std::string_view text) {
  size_t i = 0;
  for (; i + kBytes <= text.size(); i += kBytes) {
    uint32_t outsiders = mark_bits(~Class::marks(load_bytes(text.data() + i)));
    if (outsiders != 0) return i + std::countr_zero(outsiders);
  }
  while (i < text.size() && belongs<Class>(text[i])) ++i;
  return i;
}

// How many bytes at the end of `text` belong to `Class`.
template <typename Class>
size_t trailing_run(std::string_view text) {
  size_t end = text.size();
  for (; end >= kBytes; end -= kBytes) {
    uint32_t outsiders = mark_bits(~Class::marks(load_bytes(text.data() + end - kBytes)));
    if (outsiders != 0) return text.size() - (end - kBytes + std::bit_width(outsiders));
  }
  while (end > 0 && belongs<Class>(text[end - 1])) --end;
  return text.size() - end;
}

// The position of the last byte of `text` that belongs to `Class`, or npos.
template <typename Class>
size_t find_last(std::string_view text) {
  size_t end = text.size();
  for (; end >= kBytes; end -= kBytes) {
    uint32_t members = mark_bits(Class::marks(load_bytes(text.data() + end - kBytes)));
    if (members != 0) return end - kBytes + std::bit_width(members) - 1;
  }
  while (end > 0) {
    if (belongs<Class>(text[--end])) return end;
  }
  return std::string_view::npos;
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

// "address symbol..." → "symbol...": false unless `line` starts with a hex address and a space.
bool skip_address(std::string_view& line) {
  size_t end = leading_run<HexDigit>(line);
  if (end == 0 || end == line.size() || line[end] != ' ') return false;
  line = trim_front(line.substr(end + 1));
  return true;
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
    symbol = trim_back(rest.substr(0, open));  // `rest` starts with no blank
    return true;
  };
  // Usually the dso holds no parenthesis: the last one before its ')' is its '('.
  size_t last = find_last<Parenthesis>(rest.substr(0, rest.size() - 1));
  if (last == std::string_view::npos) return false;
  if (rest[last] == '(') return split_at(last);
  int depth = 0;
  for (size_t i = rest.size(); i-- > 0;) {
    if (rest[i] == ')') ++depth;
    if (rest[i] == '(' && --depth == 0) return split_at(i);
  }
  return false;
}

// "name+0x1f" → "name"; only a trailing "+0x<hex>" is an offset ("operator+" keeps its '+').
std::string_view strip_offset(std::string_view symbol) {
  size_t end = symbol.size() - trailing_run<HexDigit>(symbol);
  if (end == symbol.size() || end < 3 || symbol.substr(end - 3, 3) != "+0x") return symbol;
  return symbol.substr(0, end - 3);
}

// Dispatches on the last character first: most dsos are user libraries, and one comparison
// tells them apart.
bool is_kernel_dso(std::string_view dso) {
  if (dso.empty()) return false;
  switch (dso.back()) {
    case ']':
      return dso == "[kernel.kallsyms]" || dso == "[guest.kernel.kallsyms]";
    case 'x':
      return dso.ends_with("vmlinux");
    case 'o':
      return dso.ends_with(".ko");
    case 'z':
      return dso.ends_with(".ko.xz");
    case 't':
      return dso.ends_with(".ko.zst");
    default:
      return false;
  }
}

// A frame without a symbol is named after its dso: "(libc.so.6)", or "[unknown]" without one.
std::string_view unknown_symbol_name(std::string_view dso, std::string& scratch) {
  bool bracketed = dso.size() >= 2 && dso.front() == '[' && dso.back() == ']';
  std::string_view dso_name = bracketed ? dso.substr(1, dso.size() - 2) : dso;
  if (dso_name.empty() || dso_name == "unknown") return "[unknown]";
  scratch.clear();
  scratch.push_back('(');
  scratch.append(dso_name);
  scratch.push_back(')');
  return scratch;
}

std::string_view frame_name(std::string_view symbol, std::string_view dso, std::string& scratch) {
  if (symbol.empty() || symbol == "[unknown]") return unknown_symbol_name(dso, scratch);
  bool too_long = symbol.size() > kMaxFrameLength;
  bool kernel = is_kernel_dso(dso);
  if (!too_long && !kernel) return symbol;  // the common case: a view into the line, no copy
  scratch.assign(symbol.substr(0, kMaxFrameLength));
  if (too_long) scratch.append("...");
  if (kernel) scratch.append("_[k]");
  return scratch;
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
  // A tab, then the address padded with spaces: sixteen bytes at a time, not a branch per blank.
  line.remove_prefix(leading_run<Blank>(line));
  std::string_view rest = trim_back(line);
  if (!skip_address(rest)) return false;
  std::string_view symbol, dso;
  if (!split_symbol_and_dso(rest, symbol, dso)) return false;
  name = frame_name(strip_offset(symbol), dso, scratch);
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
  if (!line.empty() && line.front() == '\t') return add_frame(line);  // most lines are frames
  feed_other(line);
}

void PerfScriptParser::feed_other(std::string_view line) {
  if (line.empty()) return end_sample();
  if (line.front() == '#') return;  // perf's own comments
  // Headers start with the comm; perf pads it with spaces when the sample has no call chain, so
  // a line that starts with a space may be either.
  auto header = parse_sample_header(line);
  if (!header) {
    if (is_space(line.front())) return add_frame(line);
    return malformed(line);
  }
  end_sample();  // a header without a blank line before it
  begin_sample(*header);
}

// Nearly every line is a frame: parse_frame and its helpers are compiled into this function.
[[gnu::flatten]] void PerfScriptParser::add_frame(std::string_view line) {
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
