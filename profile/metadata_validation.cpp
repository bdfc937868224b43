#include "profile/metadata_validation.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/iso_time.h"
#include "common/text.h"

namespace dormant::profile {
namespace {

enum class FieldType {
  kString,
  kNumber,
  kTime,  // a datetime to Studio: an ISO-8601 string or seconds since the epoch
  kObject,
  kCloudProvider,
};

struct MetadataField {
  std::string_view name;
  FieldType type;
  bool required = true;
};

// public_ip and instance_type are in Studio's model too, but its server fills them itself.
constexpr std::array<MetadataField, 25> kMetadataFields = {{
    {"current_time", FieldType::kTime},
    {"spawn_time", FieldType::kTime},
    {"spawn_uptime_ms", FieldType::kNumber},
    {"private_ip", FieldType::kString},
    {"hostname", FieldType::kString},
    {"cloud_provider", FieldType::kCloudProvider},
    {"processors", FieldType::kNumber},
    {"memory_capacity_mb", FieldType::kNumber},
    {"system_name", FieldType::kString},
    {"os_name", FieldType::kString},
    {"os_release", FieldType::kString},
    {"kernel_release", FieldType::kString},
    {"kernel_version", FieldType::kString},
    {"hardware_type", FieldType::kString},
    {"pid", FieldType::kNumber},
    {"mac_address", FieldType::kString},
    {"agent_version", FieldType::kString},
    {"libc_type", FieldType::kString},
    {"libc_version", FieldType::kString},
    {"python_version", FieldType::kString},
    {"run_mode", FieldType::kString},
    {"deployment_type", FieldType::kString},
    {"run_arguments", FieldType::kObject},
    {"cloud_info", FieldType::kObject, false},
    {"big_data", FieldType::kObject, false},
}};

constexpr std::array<std::string_view, 4> kCloudProviders = {"AWS", "GCP", "Azure", "Unknown"};

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool is_cloud_provider(std::string_view text) {
  for (std::string_view provider : kCloudProviders) {
    if (equals_ignoring_case(text, provider)) return true;
  }
  return false;
}

// Text that Python's int() reads: digits with an optional sign, spaces around them.
bool is_integer_text(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// Text that is a finite decimal number ("1785000000.5"), as Studio reads a time given in seconds.
bool is_number_text(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  std::string copy(text);
  char* end = nullptr;
  double number = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(number) &&
         copy.find_first_of("xXnN") == std::string::npos;  // no hex, no nan or inf
}

// The problem with `value` as a `type`, or "" when there is none. Studio's model (pydantic)
// converts what it can, and so what it takes is wider than the JSON types: a number for a
// string, an integer's text for a number, seconds or their text for a time.
std::string_view type_problem(const nlohmann::json& value, FieldType type) {
  const std::string* text = value.is_string() ? &value.get_ref<const std::string&>() : nullptr;
  switch (type) {
    case FieldType::kString:
      return text || value.is_number() ? "" : "must be a string";
    case FieldType::kNumber:
      return value.is_number() || (text && is_integer_text(*text)) ? "" : "must be a number";
    case FieldType::kTime:
      if (value.is_number()) return "";
      return text && (parse_iso_time(*text) || is_number_text(*text))
                 ? ""
                 : "must be an ISO-8601 time or a number of seconds";
    case FieldType::kObject:
      return value.is_object() ? "" : "must be an object";
    case FieldType::kCloudProvider:
      return text && is_cloud_provider(*text) ? "" : "must be one of AWS, GCP, Azure, Unknown";
  }
  return "";
}

Error metadata_error(std::string_view field, std::string_view problem) {
  std::string message = "metadata.";
  message += field;
  message += ": ";
  message += problem;
  return Error::parse(std::move(message));
}

}  // namespace

Result<void> validate_profile_header(const nlohmann::json& header) {
  if (!header.is_object()) return Error::parse("header: must be an object");
  auto metadata = header.find("metadata");
  if (metadata == header.end()) return Error::parse("metadata: required");
  if (!metadata->is_object()) return Error::parse("metadata: must be an object");
  for (const MetadataField& field : kMetadataFields) {
    auto value = metadata->find(field.name);
    if (value == metadata->end()) {
      if (field.required) return metadata_error(field.name, "required");
      continue;
    }
    if (std::string_view problem = type_problem(*value, field.type); !problem.empty()) {
      return metadata_error(field.name, problem);
    }
  }
  return ok();
}

}  // namespace dormant::profile
