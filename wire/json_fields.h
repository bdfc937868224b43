// Typed reads of untrusted JSON, shared by the protocol parsers. Errors name the field's path
// ("target_hosts['web-01'][2]: ...") and quote offending text escaped and shortened, so every
// message is safe to log and to send back. A member whose value is null counts as absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "wire/limits.h"
#include "wire/wire_enums.h"

namespace dormant::wire {

// "parent.key" ("key" at the top), "parent[index]", and "parent['key']" for keys that are data
// (host names) rather than field names.
std::string member_path(std::string_view parent, std::string_view key);
std::string element_path(std::string_view parent, std::size_t index);
std::string data_key_path(std::string_view parent, std::string_view key);

// 'text', with quotes, backslashes, control and non-ASCII bytes escaped, cut after 64 bytes.
std::string single_quoted(std::string_view text);

// The parse error "<path>: <problem>".
Error field_error(std::string_view path, std::string_view problem);

// What every message body must be before its fields are read: a JSON object nested at most
// kMaxNesting levels deep. `name` names the body in the error ("heartbeat: must be an object").
Result<void> check_body(const nlohmann::json& body, std::string_view name);

// The JSON document `text`; `name` names it in the error. nlohmann's parser is iterative, so
// deep nesting is safe here; check_body bounds it afterwards.
Result<nlohmann::json> parse_json_text(std::string_view text, std::string_view name);

// A host or service name has 1 to 255 bytes and no control characters.
Result<void> check_name(std::string_view name, const std::string& path);
// The same, up to `max_bytes`.
Result<void> check_text(std::string_view text, const std::string& path, std::size_t max_bytes);

// Readers of one JSON value (never a member's null) found at `path`.
Result<std::string> read_string(const nlohmann::json& value, const std::string& path);
// A string that passes check_name.
Result<std::string> read_name(const nlohmann::json& value, const std::string& path);
Result<std::string> read_uuid(const nlohmann::json& value, const std::string& path);
// A command id as an agent reports it: opaque, as in Performance Studio (ours are UUIDs, another
// server's need not be), 1 to 255 bytes without control characters.
Result<std::string> read_command_id(const nlohmann::json& value, const std::string& path);
Result<std::string> read_ip_address(const nlohmann::json& value, const std::string& path);
Result<bool> read_bool(const nlohmann::json& value, const std::string& path);
Result<nlohmann::json> read_object(const nlohmann::json& value, const std::string& path);
// An object of at most kMaxObjectBytes once serialized.
Result<nlohmann::json> read_bounded_object(const nlohmann::json& value, const std::string& path);
// The bytes of `value` serialized compactly (invalid UTF-8 replaced).
size_t json_size(const nlohmann::json& value);
// Whether `value`, serialized, fits kMaxObjectBytes; the error names `path`.
Result<void> check_object_size(const nlohmann::json& value, const std::string& path);
// The same for the members of a message that its protocol does not name (kept as they are); the
// error names the largest.
Result<void> check_unnamed_fields_size(const nlohmann::json& members);
// Integral values only (2.0 is 2, 2.5 is an error), within [min, max].
Result<std::int64_t> read_integer(const nlohmann::json& value, const std::string& path,
                                  std::int64_t min, std::int64_t max);
Result<double> read_number(const nlohmann::json& value, const std::string& path, double min,
                           double max);
// Seconds since the epoch, as a number or as ISO-8601 text (naive: UTC), the forms gProfiler's
// agents send a time in.
Result<double> read_epoch_seconds(const nlohmann::json& value, const std::string& path);

// "must be one of a, b, c".
template <WireEnum Enum>
std::string one_of_message() {
  std::string message = "must be one of ";
  bool first = true;
  for (std::string_view name : EnumNames<Enum>::kNames) {
    if (!first) message += ", ";
    message += name;
    first = false;
  }
  return message;
}

template <WireEnum Enum>
Result<Enum> read_enum(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string()) return field_error(path, one_of_message<Enum>());
  std::optional<Enum> parsed = enum_from_string<Enum>(value.get_ref<const std::string&>());
  if (!parsed) return field_error(path, one_of_message<Enum>());
  return *parsed;
}

// A reader of integers of type Int within [min, max].
template <typename Int>
auto integer_in(Int min, Int max) {
  return [min, max](const nlohmann::json& value, const std::string& path) -> Result<Int> {
    Result<std::int64_t> number = read_integer(value, path, min, max);
    if (!number) return std::move(number).take_error();
    return static_cast<Int>(*number);
  };
}

// A reader of numbers within [min, max].
inline auto number_in(double min, double max) {
  return [min, max](const nlohmann::json& value, const std::string& path) {
    return read_number(value, path, min, max);
  };
}

// A reader of arrays of at most `max_items` items, each read by `read_item`.
template <typename ReadItem>
auto list_of(ReadItem read_item, std::size_t max_items) {
  return [read_item, max_items](const nlohmann::json& value, const std::string& path) {
    using Item = std::remove_cvref_t<decltype(*read_item(value, path))>;
    using Items = Result<std::vector<Item>>;
    if (!value.is_array()) return Items(field_error(path, "must be a list"));
    if (value.size() > max_items) {
      return Items(field_error(path, "must have at most " + std::to_string(max_items) + " items"));
    }
    std::vector<Item> items;
    items.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
      Result<Item> item = read_item(value[i], element_path(path, i));
      if (!item) return Items(std::move(item).take_error());
      items.push_back(std::move(item).value());
    }
    return Items(std::move(items));
  };
}

// Reads the members of one JSON object. Each read stores into its destination (a T or a
// std::optional<T>) and leaves it untouched when the member is absent, so the destination's
// initial value is the default. Every member is read, and the problems of all that are wrong are
// kept (the first kMaxProblems), so a parser reads every field and checks status() once: its
// error names each bad field, as Performance Studio's validation does.
class FieldReader {
 public:
  static constexpr size_t kMaxProblems = 100;

  // `object` must be a JSON object that outlives the reader; `path` names it ("" at the top).
  FieldReader(const nlohmann::json& object, std::string path)
      : object_(object), path_(std::move(path)) {}

  // The member `key`, or nullptr when it is absent or null.
  const nlohmann::json* find(std::string_view key) const;
  // Whether the object has the member `key`, null or not.
  bool has(std::string_view key) const { return object_.contains(key); }
  std::string path_of(std::string_view key) const { return member_path(path_, key); }

  template <typename Out, typename Read>
  void optional(std::string_view key, Out& out, Read&& read) {
    if (const nlohmann::json* value = find(key)) store(read(*value, path_of(key)), out);
  }

  // Records "<key>: required" when the member is absent.
  template <typename Out, typename Read>
  void required(std::string_view key, Out& out, Read&& read) {
    const nlohmann::json* value = find(key);
    if (value == nullptr) return fail(field_error(path_of(key), "required"));
    store(read(*value, path_of(key)), out);
  }

  // The member when it is an object; nullptr when it is absent or, recording an error, when it
  // is anything else.
  const nlohmann::json* object(std::string_view key);

  // Every member whose key is not in `known`.
  nlohmann::json members_except(const std::vector<std::string_view>& known) const;

  // Records an error found by the caller.
  void fail(Error error);
  bool ok() const { return !error_.has_value(); }
  Result<void> status() const;

  // `value`, or the first error met.
  template <typename T>
  Result<T> finish(T value) const {
    if (error_) return *error_;
    return value;
  }

 private:
  template <typename T, typename Out>
  void store(Result<T> result, Out& out) {
    if (!result) return fail(std::move(result).take_error());
    out = std::move(result).value();
  }

  const nlohmann::json& object_;
  std::string path_;
  std::optional<Error> error_;
};

}  // namespace dormant::wire
