#include "wire/plain_heartbeat.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wire/json_fields.h"
#include "wire/limits.h"

namespace dormant::wire {
namespace {

using Json = nlohmann::json;

constexpr uint32_t kNoMember = 32;

// A message's table as the fast reader uses it, copied once into a compact array: a member by
// its snake_case name, and which members must be seen, by their bit in a `seen` mask (bit i: the
// table's field i).
template <typename Message>
class PlainMembers {
 public:
  struct Member {
    std::string_view name;
    void (*store_text)(Message&, std::string&&);
    bool (*store_integer)(Message&, std::int64_t);
    bool plain_list;
  };

  static const PlainMembers& get() {
    static const PlainMembers kMembers;
    return kMembers;
  }

  const Member& operator[](uint32_t member) const { return members_[member]; }
  uint32_t find(std::string_view key) const {
    for (uint32_t i = 0; i < members_.size(); ++i) {
      if (members_[i].name == key) return i;
    }
    return kNoMember;
  }
  bool all_required_in(uint32_t seen) const { return (seen & required_) == required_; }

 private:
  PlainMembers() {
    const Fields<Message>& fields = fields_of_message<Message>();
    for (uint32_t i = 0; i < fields.size() && i < kNoMember; ++i) {
      const Field<Message>& field = fields[i];
      members_.push_back({field.name, field.store_text, field.store_integer, field.plain_list});
      if (field.presence == Presence::kRequired) required_ |= 1U << i;
    }
  }

  std::vector<Member> members_;
  uint32_t required_ = 0;
};

using ContainerMembers = PlainMembers<ReportedContainer>;
using ProcessMembers = PlainMembers<ReportedProcess>;

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
    return in_body() ? dom_.number_integer(value) : store(int64_t{value});
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    if (in_body()) return dom_.number_unsigned(value);
    return value <= static_cast<Json::number_unsigned_t>(std::numeric_limits<int64_t>::max()) &&
           store(static_cast<int64_t>(value));
  }
  bool number_float(Json::number_float_t value, const std::string& text) {
    return in_body() && dom_.number_float(value, text);
  }
  bool string(std::string& value) {
    return in_body() ? dom_.string(value) : store(std::move(value));
  }
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
  // Stores a text or an integer by the entry of member_ in the table of the message the parse is
  // in (a container or a process); false where that member takes no such value.
  template <typename Value>
  bool store(Value value);
  template <typename Message>
  static bool store_into(const typename PlainMembers<Message>::Member& member, Message& message,
                         std::string&& text) {
    if (member.store_text == nullptr) return false;
    member.store_text(message, std::move(text));
    return true;
  }
  template <typename Message>
  static bool store_into(const typename PlainMembers<Message>::Member& member, Message& message,
                         int64_t number) {
    return member.store_integer != nullptr && member.store_integer(message, number);
  }
  // Whether member_ is not in `seen` yet; it is now.
  bool first_time(uint32_t& seen) {
    if ((seen & (1U << member_)) != 0) return false;
    seen |= 1U << member_;
    return true;
  }

  const ContainerMembers& container_members_ = ContainerMembers::get();
  const ProcessMembers& process_members_ = ProcessMembers::get();
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  Where where_ = Where::kBody;
  int depth_ = 0;                // of the body's own arrays and objects
  uint32_t container_seen_ = 0;  // the members read, by bit
  uint32_t process_seen_ = 0;
  uint32_t member_ = kNoMember;  // whose value comes next: its field in the container's or the
                                 // process's table
};

bool PlainReader::key(std::string& key) {
  switch (where_) {
    case Where::kBody:
      if (depth_ != 1 || key != "containers") return dom_.key(key);
      if (containers) return false;  // the member twice: the document keeps the last one
      where_ = Where::kListNext;
      return true;
    case Where::kContainer:
      member_ = container_members_.find(key);
      return member_ != kNoMember && first_time(container_seen_);
    case Where::kProcess:
      member_ = process_members_.find(key);
      return member_ != kNoMember && first_time(process_seen_);
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
      if (!container_members_.all_required_in(container_seen_)) return false;
      where_ = Where::kList;
      return true;
    case Where::kProcess:
      if (!process_members_.all_required_in(process_seen_)) return false;
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
      // The one list a container has: its processes.
      if (member_ == kNoMember || !container_members_[member_].plain_list) return false;
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

template <typename Value>
bool PlainReader::store(Value value) {
  bool stored = false;
  if (member_ == kNoMember) return false;
  if (where_ == Where::kProcess) {
    stored = store_into(process_members_[member_], container().processes.back(), std::move(value));
  } else if (where_ == Where::kContainer) {
    stored = store_into(container_members_[member_], container(), std::move(value));
  }
  if (stored) member_ = kNoMember;
  return stored;
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
