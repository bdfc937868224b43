#include "server/storage/json_columns.h"

#include <array>
#include <limits>

#include <openssl/sha.h>

#include "common/text.h"

namespace dormant::server::storage {

std::string text_digest(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  return to_hex({reinterpret_cast<const char*>(digest.data()), digest.size()});
}
namespace {

Error bad_column(std::string_view column, std::string_view what) {
  return Error::parse("column " + std::string(column) + " holds " + std::string(what));
}

Result<PidList> pids_from(const nlohmann::json& array, std::string_view column) {
  if (!array.is_array()) return bad_column(column, "a pid list that is not a JSON array");
  PidList pids;
  pids.reserve(array.size());
  for (const auto& pid : array) {
    if (!pid.is_number_integer() || pid.get<int64_t>() <= 0 ||
        pid.get<int64_t>() > std::numeric_limits<pid_t>::max()) {
      return bad_column(column, "a pid that is not a process id: " + pid.dump());
    }
    pids.push_back(pid.get<pid_t>());
  }
  return pids;
}

}  // namespace

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<nlohmann::json> parse_json_column(std::string_view text, std::string_view column) {
  auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return bad_column(column, "text that is not JSON");
  return value;
}

std::string strings_to_json(const std::vector<std::string>& strings) { return json_text(strings); }

Result<std::vector<std::string>> strings_from_json(std::string_view text, std::string_view column) {
  auto value = parse_json_column(text, column);
  if (!value) return std::move(value).take_error();
  if (!value->is_array()) return bad_column(column, "JSON that is not an array");
  std::vector<std::string> strings;
  for (const auto& item : *value) {
    if (!item.is_string()) return bad_column(column, "an array item that is not a string");
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

std::optional<std::string> pids_to_json(const std::optional<PidList>& pids) {
  if (!pids) return std::nullopt;
  return json_text(*pids);
}

Result<std::optional<PidList>> pids_from_json(const std::optional<std::string>& text,
                                              std::string_view column) {
  if (!text) return std::optional<PidList>();
  auto value = parse_json_column(*text, column);
  if (!value) return std::move(value).take_error();
  auto pids = pids_from(*value, column);
  if (!pids) return std::move(pids).take_error();
  return std::optional<PidList>(std::move(*pids));
}

std::string target_hosts_to_json(const TargetHosts& hosts) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& [hostname, pids] : hosts) {
    object[hostname] = pids ? nlohmann::json(*pids) : nlohmann::json(nullptr);
  }
  return json_text(object);
}

Result<TargetHosts> target_hosts_from_json(std::string_view text, std::string_view column) {
  auto value = parse_json_column(text, column);
  if (!value) return std::move(value).take_error();
  if (!value->is_object()) return bad_column(column, "JSON that is not an object");
  TargetHosts hosts;
  for (const auto& [hostname, pids] : value->items()) {
    if (pids.is_null()) {
      hosts[hostname] = std::nullopt;
      continue;
    }
    auto list = pids_from(pids, column);
    if (!list) return std::move(list).take_error();
    hosts[hostname] = std::move(*list);
  }
  return hosts;
}

}  // namespace dormant::server::storage
