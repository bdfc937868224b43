#include "profile/metadata_validation.h"

#include <array>
#include <cctype>
#include <string>
#include <string_view>

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

// "2026-11-22T10:00:00", with optional seconds, fraction and zone (Z, +02, +02:00, +0200),
// or a space for the T: the forms Studio's datetime parsing takes.
bool is_iso_datetime(std::string_view text) {
  std::size_t at = 0;
  auto digits = [&](std::size_t count) {
    for (std::size_t i = 0; i < count; ++i, ++at) {
      if (at >= text.size() || !std::isdigit(static_cast<unsigned char>(text[at]))) return false;
    }
    return true;
  };
  auto literal = [&](char c) {
    if (at >= text.size() || text[at] != c) return false;
    ++at;
    return true;
  };
  if (!(digits(4) && literal('-') && digits(2) && literal('-') && digits(2))) return false;
  if (!(literal('T') || literal(' '))) return false;
  if (!(digits(2) && literal(':') && digits(2))) return false;
  if (literal(':')) {
    if (!digits(2)) return false;
    if (literal('.')) {
      if (!digits(1)) return false;
      while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) ++at;
    }
  }
  if (literal('Z')) return at == text.size();
  if (literal('+') || literal('-')) {
    if (!digits(2)) return false;
    bool minutes_follow = literal(':') || at < text.size();
    if (minutes_follow && !digits(2)) return false;
  }
  return at == text.size();
}

// The problem with `value` as a `type`, or "" when there is none.
std::string_view type_problem(const nlohmann::json& value, FieldType type) {
  switch (type) {
    case FieldType::kString:
      return value.is_string() ? "" : "must be a string";
    case FieldType::kNumber:
      return value.is_number() ? "" : "must be a number";
    case FieldType::kTime:
      if (value.is_number()) return "";
      return value.is_string() && is_iso_datetime(value.get_ref<const std::string&>())
                 ? ""
                 : "must be an ISO-8601 time or a number of seconds";
    case FieldType::kObject:
      return value.is_object() ? "" : "must be an object";
    case FieldType::kCloudProvider:
      return value.is_string() && is_cloud_provider(value.get_ref<const std::string&>())
                 ? ""
                 : "must be one of AWS, GCP, Azure, Unknown";
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
