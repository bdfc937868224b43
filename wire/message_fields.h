// One declared table per message: each member's name on the wire (and the camelCase spelling
// Studio's models also take), whether it is required, how it is read and checked, and how it is
// written. The table drives the message's document reader (read_fields), its writer
// (write_fields) and, for the lists a heartbeat carries, the fast reader of plain_heartbeat.cpp,
// which stores text and integer members straight from the parser's events.
//
// A message's table is found by `fields_of(std::type_identity<Message>)`, declared beside the
// message (protocol.h, profiling_request.h, command_config.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "wire/json_fields.h"

namespace dormant::wire {

enum class Presence { kOptional, kRequired };

template <typename Message>
struct Field;
template <typename Message>
using Fields = std::vector<Field<Message>>;

// Messages that have a table.
template <typename Message>
concept HasFields = requires {
  fields_of(std::type_identity<Message>{});
};

template <typename Message>
const Fields<Message>& fields_of_message() {
  return fields_of(std::type_identity<Message>{});
}

template <typename Message>
struct Field {
  std::string_view name;
  std::string_view alias{};  // read where `name` is absent; empty: none
  Presence presence = Presence::kOptional;
  // Reads the member from `fields` (the message's object) into `message`; problems go to
  // `fields`. `key` is the spelling the object uses.
  std::function<void(FieldReader& fields, std::string_view key, Presence presence,
                     Message& message)>
      read;
  // The member's value on the wire, or nullopt to leave it out; null: the field is read only.
  std::function<std::optional<nlohmann::json>(const Message& message)> write;
  bool left_out_when_null = false;  // a null value is left out rather than written
  // For the fast reader: stores a string or an integer as the document reader would read it,
  // or says false (an integer out of range). Null: the fast reader does not take this member.
  void (*store_text)(Message& message, std::string&& text) = nullptr;
  bool (*store_integer)(Message& message, std::int64_t number) = nullptr;
  // The member is a list of messages the fast reader reads by their own table.
  bool plain_list = false;

  Field required() && {
    presence = Presence::kRequired;
    return std::move(*this);
  }
  Field spelled_also(std::string_view camel_case) && {
    alias = camel_case;
    return std::move(*this);
  }
  Field written_by(std::function<std::optional<nlohmann::json>(const Message&)> writer) && {
    write = std::move(writer);
    return std::move(*this);
  }
  Field omitted_when_null() && {
    left_out_when_null = true;
    return std::move(*this);
  }
  Field read_by(std::function<void(FieldReader&, std::string_view, Presence, Message&)> reader) && {
    read = std::move(reader);
    return std::move(*this);
  }

  // The spelling `fields` uses: the name, or the alias where only that is there.
  std::string_view key_in(const FieldReader& fields) const {
    return alias.empty() || fields.find(name) || !fields.find(alias) ? name : alias;
  }
};

// A member's value as it goes on the wire: an absent optional as null, an enumeration by its
// word, a list item by item, a map member by member, a message by its table.
template <typename T>
nlohmann::json wire_value(const T& value);

// Writes the members the table names into `body`, an object.
template <typename Message>
void write_fields(const Message& message, nlohmann::json& body) {
  for (const Field<Message>& field : fields_of_message<Message>()) {
    if (!field.write) continue;
    std::optional<nlohmann::json> value = field.write(message);
    if (value && !(field.left_out_when_null && value->is_null())) {
      body[field.name] = std::move(*value);
    }
  }
}

template <typename Message>
nlohmann::json write_fields(const Message& message) {
  nlohmann::json body = nlohmann::json::object();
  write_fields(message, body);
  return body;
}

template <typename T>
nlohmann::json wire_value(const T& value) {
  if constexpr (requires {
                  value.has_value();
                  *value;
                }) {
    return value ? wire_value(*value) : nlohmann::json(nullptr);
  } else if constexpr (NamedEnum<T>) {
    return to_string(value);
  } else if constexpr (HasFields<T>) {
    return write_fields(value);
  } else if constexpr (requires { typename T::mapped_type; } &&
                       !std::is_same_v<T, nlohmann::json>) {
    nlohmann::json members = nlohmann::json::object();
    for (const auto& [key, item] : value) members[key] = wire_value(item);
    return members;
  } else if constexpr (requires {
                         value.begin();
                         typename T::value_type;
                       } &&
                       !std::is_convertible_v<T, std::string_view> &&
                       !std::is_same_v<T, nlohmann::json>) {
    nlohmann::json items = nlohmann::json::array();
    for (const auto& item : value) items.push_back(wire_value(item));
    return items;
  } else {
    return nlohmann::json(value);
  }
}

// Reads every member the table names into `message`.
template <typename Message>
void read_fields(FieldReader& fields, Message& message) {
  for (const Field<Message>& field : fields_of_message<Message>()) {
    field.read(fields, field.key_in(fields), field.presence, message);
  }
}

// A message nested in another (a list's item): an object read by its table.
template <HasFields Message>
Result<Message> read_message(const nlohmann::json& value, const std::string& path) {
  if (!value.is_object()) return field_error(path, "must be an object");
  FieldReader fields(value, path);
  Message message;
  read_fields(fields, message);
  return fields.finish(std::move(message));
}

// A message's whole body: an object nested within bounds (check_body; `name` names it in the
// error), read by its table.
template <HasFields Message>
Result<Message> read_body(const nlohmann::json& body, std::string_view name) {
  if (Result<void> checked = check_body(body, name); !checked) {
    return std::move(checked).take_error();
  }
  return read_message<Message>(body, "");
}

// The members of `fields`'s object that the table does not name.
template <typename Message>
nlohmann::json members_not_named(const FieldReader& fields) {
  static const std::vector<std::string_view> kNamed = [] {
    std::vector<std::string_view> named;
    for (const Field<Message>& field : fields_of_message<Message>()) {
      named.push_back(field.name);
      if (!field.alias.empty()) named.push_back(field.alias);
    }
    return named;
  }();
  return fields.members_except(kNamed);
}

template <typename Pointer>
struct MemberPointer;
template <typename Class, typename Type>
struct MemberPointer<Type Class::*> {
  using Message = Class;
  using Value = Type;
};

// The field `name` of `member`, read by `read` (a function of (value, path) to Result<T>) and
// written as wire_value writes it.
template <typename Message, typename Member, typename Read>
Field<Message> field(std::string_view name, Member Message::*member, Read read) {
  Field<Message> made;
  made.name = name;
  made.read = [member, read](FieldReader& fields, std::string_view key, Presence presence,
                             Message& message) {
    if (presence == Presence::kRequired) {
      fields.required(key, message.*member, read);
    } else {
      fields.optional(key, message.*member, read);
    }
  };
  made.write = [member](const Message& message) -> std::optional<nlohmann::json> {
    return wire_value(message.*member);
  };
  return made;
}

// A text member (std::string or std::optional<std::string>) of any string, which the fast reader
// stores as it comes.
template <auto kMember>
auto text(std::string_view name) {
  using Message = typename MemberPointer<decltype(kMember)>::Message;
  Field<Message> made = field(name, kMember, read_string);
  made.store_text = [](Message& message, std::string&& value) {
    message.*kMember = std::move(value);
  };
  return made;
}

// An integer member within [kMin, kMax], which the fast reader stores as it comes.
template <auto kMember, std::int64_t kMin, std::int64_t kMax>
auto integer(std::string_view name) {
  using Message = typename MemberPointer<decltype(kMember)>::Message;
  using Value = typename MemberPointer<decltype(kMember)>::Value;
  Field<Message> made = field(name, kMember, integer_in<Value>(kMin, kMax));
  made.store_integer = [](Message& message, std::int64_t value) {
    if (value < kMin || value > kMax) return false;
    message.*kMember = static_cast<Value>(value);
    return true;
  };
  return made;
}

// A list of at most `max_items` messages, each read by its own table; the fast reader reads it
// item by item.
template <typename Message, typename Item>
Field<Message> list_of_messages(std::string_view name, std::vector<Item> Message::*member,
                                std::size_t max_items) {
  Field<Message> made = field(name, member, list_of(read_message<Item>, max_items));
  made.plain_list = true;
  return made;
}

}  // namespace dormant::wire
