// Text helpers for the parsers of files and messages: ASCII whitespace trimming, splitting,
// joining and whole numbers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dormant {

// ' ', '\t', '\n', '\v', '\f', '\r', as isspace() in the C locale, without the locale. Printable
// characters, the common case, fail the first comparison.
constexpr bool is_ascii_space(char c) {
  return static_cast<unsigned char>(c) <= ' ' && (c == ' ' || (c >= '\t' && c <= '\r'));
}

// `text` without its leading / trailing / leading and trailing ASCII whitespace. Inline: the perf
// script parser calls them for every line.
constexpr std::string_view trim_front(std::string_view text) {
  size_t blanks = 0;
  while (blanks < text.size() && is_ascii_space(text[blanks])) ++blanks;
  text.remove_prefix(blanks);
  return text;
}

constexpr std::string_view trim_back(std::string_view text) {
  while (!text.empty() && is_ascii_space(text.back())) text.remove_suffix(1);
  return text;
}

constexpr std::string_view trim(std::string_view text) { return trim_back(trim_front(text)); }

// The parts of `text` between the separators: "a,,b" → {"a", "", "b"}; "" → {""}.
std::vector<std::string_view> split(std::string_view text, char separator);

// `text` as a whole number in decimal, all of it ("12", "-3"); nullopt for anything else.
std::optional<int64_t> parse_integer(std::string_view text);

// `text` as a log line may show it: whole when it has at most `most` bytes, else its first `most`
// and "... (N bytes)".
std::string shortened(std::string text, size_t most);

// Each byte of `bytes` as two lower-case hex digits.
std::string to_hex(std::string_view bytes);

// The parts (strings or string views) with `separator` between them: {"a", "b"}, ", " → "a, b".
template <typename Parts>
std::string join(const Parts& parts, std::string_view separator) {
  std::string text;
  bool first = true;
  for (const auto& part : parts) {
    if (!first) text += separator;
    text += part;
    first = false;
  }
  return text;
}

// The first `most` parts, each between `quote`s, joined by ", ", and " and N more" for the rest:
// a list a message can name in full without growing with it.
template <typename Parts>
std::string join_first(const Parts& parts, size_t most, std::string_view quote = "") {
  std::string text;
  size_t named = 0;
  for (const auto& part : parts) {
    if (named == most) break;
    if (named++ > 0) text += ", ";
    ((text += quote) += part) += quote;
  }
  if (std::size(parts) > most) text += " and " + std::to_string(std::size(parts) - most) + " more";
  return text;
}

}  // namespace dormant
