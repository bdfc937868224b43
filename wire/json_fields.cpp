#include "wire/json_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "common/iso_time.h"
#include "wire/ids.h"

namespace dormant::wire {
namespace {

constexpr std::size_t kMaxQuotedBytes = 64;
constexpr std::size_t kMaxNameBytes = 255;

bool nested_deeper_than(const nlohmann::json& value, int levels) {
  if (!value.is_structured()) return false;
  if (levels == 0) return true;
  for (const nlohmann::json& item : value) {
    if (nested_deeper_than(item, levels - 1)) return true;
  }
  return false;
}

// 31536000 rather than 3.1536e+07.
std::string format_number(double number) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.15g", number);
  return text;
}

Error out_of_range(const nlohmann::json& value, const std::string& path, double min, double max) {
  if (max >= std::numeric_limits<double>::max()) {
    return field_error(path, value.dump() + " is less than " + format_number(min));
  }
  return field_error(
      path, value.dump() + " is not between " + format_number(min) + " and " + format_number(max));
}

}  // namespace

std::string member_path(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string path(parent);
  path += '.';
  path += key;
  return path;
}

std::string element_path(std::string_view parent, std::size_t index) {
  std::string path(parent);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

std::string data_key_path(std::string_view parent, std::string_view key) {
  std::string path(parent);
  path += '[';
  path += single_quoted(key);
  path += ']';
  return path;
}

std::string single_quoted(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMaxQuotedBytes; ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '\'' || byte == '\\') {
      out += '\\';
      out += static_cast<char>(byte);
    } else if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte >= 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    } else {
      out += static_cast<char>(byte);
    }
  }
  out += '\'';
  if (text.size() > kMaxQuotedBytes) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

Error field_error(std::string_view path, std::string_view problem) {
  return Error::problem(ErrorKind::kParse, std::string(path), std::string(problem));
}

Result<nlohmann::json> parse_json_text(std::string_view text, std::string_view name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    // error.what() quotes the input; the byte offset says enough and is safe to echo.
    return field_error(name, "not valid JSON (error at byte " + std::to_string(error.byte) + ")");
  } catch (const nlohmann::json::out_of_range&) {
    return field_error(name, "not valid JSON (a number too large for a double, such as 1e999)");
  }
}

Result<void> check_body(const nlohmann::json& body, std::string_view name) {
  if (!body.is_object()) return field_error(name, "must be an object");
  if (nested_deeper_than(body, kMaxNesting)) {
    return field_error(name, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  return ok();
}

Result<std::string> read_string(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string()) return field_error(path, "must be a string");
  return value.get<std::string>();
}

Result<void> check_name(std::string_view name, const std::string& path) {
  return check_text(name, path, kMaxNameBytes);
}

Result<void> check_text(std::string_view name, const std::string& path, std::size_t max_bytes) {
  if (name.empty()) return field_error(path, "must not be empty");
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return field_error(path, single_quoted(name) + " contains a control character");
    }
  }
  if (name.size() > max_bytes) {
    return field_error(
        path, single_quoted(name) + " is longer than " + std::to_string(max_bytes) + " bytes");
  }
  return ok();
}

Result<std::string> read_name(const nlohmann::json& value, const std::string& path) {
  Result<std::string> name = read_string(value, path);
  if (!name) return name;
  if (Result<void> checked = check_name(*name, path); !checked) {
    return std::move(checked).take_error();
  }
  return name;
}

Result<std::string> read_command_id(const nlohmann::json& value, const std::string& path) {
  return read_name(value, path);
}

Result<std::string> read_uuid(const nlohmann::json& value, const std::string& path) {
  Result<std::string> text = read_string(value, path);
  if (text && !is_uuid(*text)) return field_error(path, single_quoted(*text) + " is not a UUID");
  return text;
}

Result<std::string> read_ip_address(const nlohmann::json& value, const std::string& path) {
  Result<std::string> text = read_string(value, path);
  if (text && !is_ip_address(*text)) {
    return field_error(path, single_quoted(*text) + " is not an IP address");
  }
  return text;
}

Result<bool> read_bool(const nlohmann::json& value, const std::string& path) {
  if (!value.is_boolean()) return field_error(path, "must be true or false");
  return value.get<bool>();
}

Result<nlohmann::json> read_object(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object()) return field_error(path, "must be an object");
  return value;
}

size_t json_size(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
}

Result<void> check_object_size(const nlohmann::json& value, const std::string& path) {
  const size_t size = json_size(value);
  if (size > kMaxObjectBytes) {
    return field_error(path, "must be at most " + std::to_string(kMaxObjectBytes >> 10) +
                                 " KiB as JSON (it has " + std::to_string(size) + " bytes)");
  }
  return ok();
}

Result<void> check_unnamed_fields_size(const nlohmann::json& members) {
  const size_t size = json_size(members);
  if (size <= kMaxObjectBytes) return ok();
  std::string largest;
  size_t largest_size = 0;
  for (const auto& [key, value] : members.items()) {
    if (size_t member_size = json_size(value); member_size >= largest_size) {
      largest = key;
      largest_size = member_size;
    }
  }
  return field_error(data_key_path("", largest),
                     "the fields this protocol does not name may take at most " +
                         std::to_string(kMaxObjectBytes >> 10) + " KiB as JSON (they take " +
                         std::to_string(size) + " bytes)");
}

Result<nlohmann::json> read_bounded_object(const nlohmann::json& value, const std::string& path) {
  auto object = read_object(value, path);
  if (!object) return object;
  if (auto fits = check_object_size(*object, path); !fits) return std::move(fits).take_error();
  return object;
}

Result<std::int64_t> read_integer(const nlohmann::json& value, const std::string& path,
                                  std::int64_t min, std::int64_t max) {
  if (!value.is_number()) return field_error(path, "must be an integer");
  if (value.is_number_float()) {
    double number = value.get<double>();
    if (!std::isfinite(number) || number != std::trunc(number)) {
      return field_error(path, "must be an integer");
    }
    // Compared as doubles, so that 1e300 is refused before any conversion.
    if (number < static_cast<double>(min) || number > static_cast<double>(max)) {
      return out_of_range(value, path, static_cast<double>(min), static_cast<double>(max));
    }
    return static_cast<std::int64_t>(number);
  }
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return out_of_range(value, path, static_cast<double>(min), static_cast<double>(max));
  }
  auto number = value.get<std::int64_t>();
  if (number < min || number > max) {
    return out_of_range(value, path, static_cast<double>(min), static_cast<double>(max));
  }
  return number;
}

Result<double> read_number(const nlohmann::json& value, const std::string& path, double min,
                           double max) {
  if (!value.is_number()) return field_error(path, "must be a number");
  auto number = value.get<double>();
  if (!std::isfinite(number) || number < min || number > max) {
    return out_of_range(value, path, min, max);
  }
  return number;
}

Result<double> read_epoch_seconds(const nlohmann::json& value, const std::string& path) {
  constexpr std::string_view kForms = "must be an ISO-8601 time or a number of seconds";
  if (value.is_number()) return read_number(value, path, 0, std::numeric_limits<double>::max());
  if (!value.is_string()) return field_error(path, kForms);
  const std::string& text = value.get_ref<const std::string&>();
  auto time = parse_iso_time(text);
  if (!time) return field_error(path, single_quoted(text) + " " + std::string(kForms));
  return std::chrono::duration<double>(time->time_since_epoch()).count();
}

const nlohmann::json* FieldReader::find(std::string_view key) const {
  auto member = object_.find(key);
  if (member == object_.end() || member->is_null()) return nullptr;
  return &*member;
}

const nlohmann::json* FieldReader::object(std::string_view key) {
  const nlohmann::json* value = find(key);
  if (value != nullptr && !value->is_object()) {
    fail(field_error(path_of(key), "must be an object"));
    return nullptr;
  }
  return value;
}

nlohmann::json FieldReader::members_except(const std::vector<std::string_view>& known) const {
  nlohmann::json members = nlohmann::json::object();
  for (const auto& [key, value] : object_.items()) {
    bool is_known = false;
    for (std::string_view name : known) is_known = is_known || name == key;
    if (!is_known) members[key] = value;
  }
  return members;
}

void FieldReader::fail(Error error) {
  if (!error_) {
    error_ = std::move(error);
  } else if (error_->problems().size() < kMaxProblems) {
    error_->add_problems_of(error);
  }
}

Result<void> FieldReader::status() const {
  if (error_) return *error_;
  return dormant::ok();
}

}  // namespace dormant::wire
