#include "wire/plain_heartbeat.h"

#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wire/container_texts.h"
#include "wire/json_fields.h"
#include "wire/limits.h"

namespace dormant::wire {
namespace {

using Json = nlohmann::json;

// A container's members, by their bit in a container's `seen` mask: kContainerTexts[i] is bit i.
constexpr uint32_t kTexts = std::size(kContainerTexts);
constexpr uint32_t kContainerName = kTexts;
constexpr uint32_t kProcesses = kTexts + 1;
constexpr uint32_t kNoMember = kTexts + 2;

enum ProcessMember : uint32_t { kPid, kProcessName, kNoProcessMember };

uint32_t container_member(std::string_view key) {
  if (key == "container_name") return kContainerName;
  if (key == "processes") return kProcesses;
  for (uint32_t text = 0; text < kTexts; ++text) {
    if (kContainerTexts[text].name == key) return text;
  }
  return kNoMember;
}

// The SAX events of the body go to nlohmann's DOM builder but for the value of its "containers"
// member, which is read into structs while it keeps the plain shape. Any other event there ends the
// parse (the handler returns false).
class PlainReader {
 public:
  explicit PlainReader(Json& body) : dom_(body, false) {}

  std::optional<std::vector<ReportedContainer>> containers;

  bool null() { return in_body() && dom_.null(); }
  bool boolean(bool value) { return in_body() && dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) {
    return in_body() ? dom_.number_integer(value) : pid(value);
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    if (in_body()) return dom_.number_unsigned(value);
    return value <= static_cast<Json::number_unsigned_t>(kMaxPid) &&
           pid(static_cast<int64_t>(value));
  }
  bool number_float(Json::number_float_t value, const std::string& text) {
    return in_body() && dom_.number_float(value, text);
  }
  bool string(std::string& value) { return in_body() ? dom_.string(value) : text(value); }
  bool binary(Json::binary_t& value) { return in_body() && dom_.binary(value); }
  bool key(std::string& key);
  bool start_object(std::size_t size);
  bool end_object();
  bool start_array(std::size_t size);
  bool end_array();
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  enum class Where { kBody, kListNext, kList, kContainer, kProcesses, kProcess };

  bool in_body() const { return where_ == Where::kBody; }
  ReportedContainer& container() { return containers->back(); }
  bool text(std::string& value);
  bool pid(int64_t value);
  // Whether member_ is not in `seen` yet; it is now.
  bool first_time(uint32_t& seen) {
    if ((seen & (1U << member_)) != 0) return false;
    seen |= 1U << member_;
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  Where where_ = Where::kBody;
  int depth_ = 0;                // of the body's own arrays and objects
  uint32_t container_seen_ = 0;  // the members read, by bit
  uint32_t process_seen_ = 0;
  uint32_t member_ = kNoMember;  // whose value comes next, in a container or a process
};

bool PlainReader::key(std::string& key) {
  switch (where_) {
    case Where::kBody:
      if (depth_ != 1 || key != "containers") return dom_.key(key);
      if (containers) return false;  // the member twice: the document keeps the last one
      where_ = Where::kListNext;
      return true;
    case Where::kContainer:
      member_ = container_member(key);
      return member_ != kNoMember && first_time(container_seen_);
    case Where::kProcess:
      member_ = key == "pid" ? kPid : key == "process_name" ? kProcessName : kNoProcessMember;
      return member_ != kNoProcessMember && first_time(process_seen_);
    default:
      return false;
  }
}

bool PlainReader::start_object(std::size_t size) {
  switch (where_) {
    case Where::kBody:
      ++depth_;
      return dom_.start_object(size);
    case Where::kList:
      if (containers->size() >= kMaxListItems) return false;
      containers->emplace_back();
      where_ = Where::kContainer;
      container_seen_ = 0;
      return true;
    case Where::kProcesses:
      if (container().processes.size() >= kMaxListItems) return false;
      container().processes.emplace_back();
      where_ = Where::kProcess;
      process_seen_ = 0;
      return true;
    default:
      return false;
  }
}

bool PlainReader::end_object() {
  switch (where_) {
    case Where::kBody:
      --depth_;
      return dom_.end_object();
    case Where::kContainer:
      if ((container_seen_ & (1U << kContainerName)) == 0) return false;
      where_ = Where::kList;
      return true;
    case Where::kProcess:
      if (process_seen_ != ((1U << kPid) | (1U << kProcessName))) return false;
      where_ = Where::kProcesses;
      return true;
    default:
      return false;
  }
}

bool PlainReader::start_array(std::size_t size) {
  switch (where_) {
    case Where::kBody:
      ++depth_;
      return dom_.start_array(size);
    case Where::kListNext:
      containers.emplace();
      where_ = Where::kList;
      return true;
    case Where::kContainer:
      if (member_ != kProcesses) return false;
      where_ = Where::kProcesses;
      member_ = kNoMember;
      return true;
    default:
      return false;
  }
}

bool PlainReader::end_array() {
  switch (where_) {
    case Where::kBody:
      --depth_;
      return dom_.end_array();
    case Where::kList:
      where_ = Where::kBody;
      return true;
    case Where::kProcesses:
      where_ = Where::kContainer;
      return true;
    default:
      return false;
  }
}

bool PlainReader::text(std::string& value) {
  if (where_ == Where::kProcess && member_ == kProcessName) {
    container().processes.back().process_name = std::move(value);
    return true;
  }
  if (where_ != Where::kContainer || member_ > kContainerName) return false;
  ReportedContainer& read = container();
  if (member_ == kContainerName) {
    read.container_name = std::move(value);
  } else {
    read.*kContainerTexts[member_].member = std::move(value);
  }
  member_ = kNoMember;
  return true;
}

bool PlainReader::pid(int64_t value) {
  if (where_ != Where::kProcess || member_ != kPid || value < 1 || value > kMaxPid) return false;
  container().processes.back().pid = static_cast<int>(value);
  return true;
}

}  // namespace

std::optional<HeartbeatRequest> read_plain_heartbeat(std::string_view text) {
  Json body;
  PlainReader reader(body);
  if (!Json::sax_parse(text, &reader)) return std::nullopt;
  auto request = reader.containers ? parse_heartbeat_request(body, std::move(*reader.containers))
                                   : parse_heartbeat_request(body);
  if (!request) return std::nullopt;
  return std::move(request).value();
}

Result<HeartbeatRequest> parse_heartbeat_text(std::string_view text) {
  if (auto plain = read_plain_heartbeat(text)) return std::move(*plain);
  auto body = parse_json_text(text, "heartbeat");
  if (!body) return std::move(body).take_error();
  return parse_heartbeat_request(*body);
}

}  // namespace dormant::wire
