#include "server/api/profile_rollup.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <openssl/sha.h>

#include "common/text.h"
#include "profile/profile_header.h"

namespace dormant::server::api {
namespace {

// Sorts by id and adds up the counts of equal ids.
void sum_by_id(std::vector<storage::StackCount>& stacks) {
  std::sort(stacks.begin(), stacks.end(),
            [](const storage::StackCount& a, const storage::StackCount& b) { return a.id < b.id; });
  size_t kept = 0;
  for (size_t i = 0; i < stacks.size(); ++i) {
    if (kept > 0 && stacks[kept - 1].id == stacks[i].id) {
      stacks[kept - 1].count += stacks[i].count;
    } else {
      stacks[kept++] = stacks[i];
    }
  }
  stacks.resize(kept);
}

}  // namespace

std::string stack_text(const profile::StackTable& table, const profile::StackView& stack) {
  std::string text(stack.comm);
  for (profile::StringId id : stack.frame_ids) {
    text += ';';
    text += table.string(id);
  }
  return text;
}

storage::StackId stack_id(std::string_view text) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
  storage::StackId id = 0;
  for (int i = 0; i < 8; ++i) id |= storage::StackId{digest[i]} << (8 * i);
  return id == storage::kStacksPastCap ? 1 : id;
}

storage::ProfileRollup rollup_of(const profile::CollapsedProfile& profile,
                                 std::string_view hostname, std::string_view instance_type) {
  storage::ProfileRollup rollup;
  std::vector<std::string> containers = profile.stacks.containers();
  std::set<std::string_view> own_parts = {""};
  for (const std::string& container : containers) {
    if (own_parts.size() == kMaxRollupParts) break;
    own_parts.insert(container);
  }
  std::map<std::string_view, std::vector<storage::StackCount>> by_container;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    std::string text = stack_text(profile.stacks, stack);
    storage::StackId id = stack_id(text);
    std::string_view part =
        own_parts.contains(stack.container) ? stack.container : kContainersPastCap;
    by_container[part].push_back({id, stack.count});
    rollup.whole.push_back({id, stack.count});
    rollup.texts.emplace_back(id, std::move(text));
  });
  sum_by_id(rollup.whole);
  std::sort(rollup.texts.begin(), rollup.texts.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  rollup.texts.erase(std::unique(rollup.texts.begin(), rollup.texts.end(),
                                 [](const auto& a, const auto& b) { return a.first == b.first; }),
                     rollup.texts.end());
  for (auto& [container, stacks] : by_container) {
    sum_by_id(stacks);
    rollup.parts.push_back({storage::LabelKey{std::string(hostname), std::string(container),
                                              std::string(instance_type)},
                            std::move(stacks)});
  }
  rollup.frequency_hz = profile::header_frequency(profile.header);
  return rollup;
}

std::string instance_type_of(const nlohmann::json& header) {
  auto metadata = header.find("metadata");
  if (metadata == header.end() || !metadata->is_object()) return "";
  auto cloud = metadata->find("cloud_info");
  if (cloud == metadata->end() || !cloud->is_object()) return "";
  auto type = cloud->find("instance_type");
  if (type == cloud->end() || !type->is_string()) return "";
  const auto& text = type->get_ref<const std::string&>();
  return text.substr(text.rfind('/') + 1, 256);
}

int64_t processors_of(const nlohmann::json& header) {
  constexpr int64_t kMostProcessors = 1 << 20;
  auto metadata = header.find("metadata");
  if (metadata == header.end() || !metadata->is_object()) return 0;
  auto processors = metadata->find("processors");
  if (processors == metadata->end()) return 0;
  std::optional<int64_t> count;
  if (processors->is_number_integer()) {
    count = processors->get<int64_t>();
  } else if (processors->is_number_float()) {
    double value = processors->get<double>();
    if (value >= 1 && value <= kMostProcessors &&
        value == static_cast<double>(static_cast<int64_t>(value))) {
      count = static_cast<int64_t>(value);
    }
  } else if (processors->is_string()) {
    count = parse_integer(processors->get_ref<const std::string&>());
  }
  return count && *count > 0 && *count <= kMostProcessors ? *count : 0;
}

}  // namespace dormant::server::api
