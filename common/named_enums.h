// Enumerations whose values are words, the same word in the agent's flags, on the wire and in the
// server's database. EnumNames<E>::kNames holds E's words in declaration order; to_string and
// enum_from_string work for every enumeration that has them.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace dormant {

template <typename Enum>
struct EnumNames;

template <typename Enum>
concept NamedEnum = requires {
  EnumNames<Enum>::kNames;
};

template <NamedEnum Enum>
constexpr std::string_view to_string(Enum value) {
  const auto& names = EnumNames<Enum>::kNames;
  auto index = static_cast<std::size_t>(value);
  return index < names.size() ? names[index] : "?";
}

// The value named `name` exactly (the words are case-sensitive), if any.
template <NamedEnum Enum>
constexpr std::optional<Enum> enum_from_string(std::string_view name) {
  const auto& names = EnumNames<Enum>::kNames;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace dormant
