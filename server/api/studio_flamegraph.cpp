#include "server/api/studio_flamegraph.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace dormant::server::api {
namespace {

struct Marker {
  std::string_view suffix;
  std::string_view language;
  std::string_view special_type;
};

// gProfiler's markers, the longer of two that end alike first.
constexpr std::array<Marker, 12> kMarkers = {{
    {"_[j]_[s]", "Java", ""},
    {"_[j]", "Java", ""},
    {"_[i]", "Java", "Java (inl)"},
    {"_[1]", "Java", "Java (C1)"},
    {"_[0]", "Java", "Java (interpreted)"},
    {"_[pe]", "Python", ""},
    {"_[p]", "Python", ""},
    {"_[php]", "PHP", ""},
    {"_[rb]", "Ruby", ""},
    {"_[k]", "Kernel", ""},
    {"_[net]", ".NET", ""},
    {"_[pn]", "Other", ""},
}};

bool is_dotted_identifier(std::string_view name) {
  return name.find('.') != std::string_view::npos &&
         name.find_first_of(" \t") == std::string_view::npos;
}

bool is_library(std::string_view name) {
  return name.starts_with('[') && name.ends_with(']') && name.find(".so") != std::string_view::npos;
}

// Studio's order of rules: the first that matches names the language.
std::string_view language_of(std::string_view name, const Marker* marker,
                             std::string_view parent_language) {
  auto marked = [&](std::string_view language) {
    return marker != nullptr && marker->language == language;
  };
  if (marked("Java")) return "Java";
  if (marked("Python") || name.ends_with(".py)") || name.starts_with("<decorator-gen-")) {
    return "Python";
  }
  if (marked("PHP")) return "PHP";
  if (marked("Ruby")) return "Ruby";
  if (name.starts_with("LazyCompile") || name.starts_with("InterpretedFunction")) return "Node";
  if (name.find("::") != std::string_view::npos) return "C++";
  if (marked("Kernel")) return "Kernel";
  if (marked(".NET")) return ".NET";
  if (marked("Other") || is_library(name)) return "Other";
  if (is_dotted_identifier(name)) {
    bool go =
        name.starts_with("runtime.") || name.starts_with("runtime/") || parent_language == "Go";
    return go ? "Go" : "Other";
  }
  return "Other";
}

struct Node {
  std::string_view name;
  uint32_t parent = 0;
  uint32_t depth = 0;
  uint64_t value = 0;
  std::vector<uint32_t> children;
  bool kept = false;
};

struct ChildKey {
  uint32_t parent;
  const char* name;  // the table interns every string once: one pointer per distinct name
  bool operator==(const ChildKey&) const = default;
};
struct ChildKeyHash {
  size_t operator()(const ChildKey& key) const {
    return std::hash<const void*>()(key.name) * 31 + key.parent;
  }
};

class Tree {
 public:
  explicit Tree(const profile::StackTable& stacks) {
    nodes_.push_back({"root", 0, 0, 0, {}, true});
    stacks.for_each([&](const profile::StackView& stack) {
      uint32_t at = child(0, stack.comm);
      nodes_[0].value += stack.count;
      nodes_[at].value += stack.count;
      for (profile::StringId id : stack.frame_ids) {
        at = child(at, stacks.string(id));
        nodes_[at].value += stack.count;
      }
    });
  }

  // Keeps the `most` largest nodes; among equal ones the shallower first, so a parent before its
  // children.
  void keep_largest(size_t most) {
    std::vector<uint32_t> order(nodes_.size() - 1);
    for (uint32_t i = 1; i < nodes_.size(); ++i) order[i - 1] = i;
    auto larger = [&](uint32_t a, uint32_t b) {
      if (nodes_[a].value != nodes_[b].value) return nodes_[a].value > nodes_[b].value;
      if (nodes_[a].depth != nodes_[b].depth) return nodes_[a].depth < nodes_[b].depth;
      return a < b;
    };
    if (order.size() > most) {
      std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(most),
                       order.end(), larger);
      order.resize(most);
    }
    for (uint32_t i : order) nodes_[i].kept = true;
    // A tie cut between a parent and its child keeps the parent (shallower first); a child whose
    // parent went anyway goes too.
    for (uint32_t i = 1; i < nodes_.size(); ++i) {
      if (nodes_[i].kept && !nodes_[nodes_[i].parent].kept) nodes_[i].kept = false;
    }
  }

  nlohmann::json to_json(const StudioTreeOptions& options) {
    std::vector<uint64_t> values;
    for (uint32_t i = 1; i < nodes_.size(); ++i) {
      if (nodes_[i].kept) values.push_back(nodes_[i].value);
    }
    nlohmann::json root = {{"name", "root"},
                           {"value", nodes_[0].value},
                           {"children", children_json(0, "Other", options)},
                           {"percentiles", percentiles(std::move(values))}};
    return root;
  }

 private:
  uint32_t child(uint32_t parent, std::string_view name) {
    auto [found, added] =
        children_.try_emplace({parent, name.data()}, static_cast<uint32_t>(nodes_.size()));
    if (added) {
      nodes_.push_back({name, parent, nodes_[parent].depth + 1, 0, {}, false});
      nodes_[parent].children.push_back(found->second);
    }
    return found->second;
  }

  nlohmann::json children_json(uint32_t parent, std::string_view parent_language,
                               const StudioTreeOptions& options) {
    std::vector<uint32_t> kept;
    for (uint32_t i : nodes_[parent].children) {
      if (nodes_[i].kept) kept.push_back(i);
    }
    std::sort(kept.begin(), kept.end(),
              [&](uint32_t a, uint32_t b) { return nodes_[a].name < nodes_[b].name; });
    nlohmann::json children = nlohmann::json::array();
    for (uint32_t i : kept) {
      const Node& node = nodes_[i];
      nlohmann::json json;
      std::string_view language = "Other";
      if (options.languages) {
        StudioFrame frame = studio_frame(node.name, parent_language);
        language = frame.language;
        json["name"] = frame.name;
        if (!frame.suffix.empty()) json["suffix"] = frame.suffix;
        json["language"] = frame.language;
        if (!frame.special_type.empty()) json["specialType"] = frame.special_type;
      } else {
        json["name"] = node.name;
      }
      json["value"] = node.value;
      json["children"] = children_json(i, language, options);
      children.push_back(std::move(json));
    }
    return children;
  }

  // The 1st to the 100th percentile of the values (nearest rank), as integer strings.
  static nlohmann::json percentiles(std::vector<uint64_t> values) {
    nlohmann::json out = nlohmann::json::object();
    if (values.empty()) return out;
    std::sort(values.begin(), values.end());
    for (int p = 1; p <= 100; ++p) {
      size_t rank = (static_cast<size_t>(p) * values.size() + 99) / 100;
      out[std::to_string(p)] = std::to_string(values[std::max<size_t>(rank, 1) - 1]);
    }
    return out;
  }

  std::vector<Node> nodes_;
  std::unordered_map<ChildKey, uint32_t, ChildKeyHash> children_;
};

}  // namespace

StudioFrame studio_frame(std::string_view name, std::string_view parent_language) {
  const Marker* marker = nullptr;
  for (const Marker& candidate : kMarkers) {
    if (name.ends_with(candidate.suffix)) {
      marker = &candidate;
      break;
    }
  }
  std::string_view bare = marker ? name.substr(0, name.size() - marker->suffix.size()) : name;
  StudioFrame frame;
  frame.language = language_of(bare, marker, parent_language);
  if (name.starts_with("appid:")) frame.special_type = "Appid";
  bool keeps_suffix = frame.language == "C++" || frame.language == "Node" || frame.language == "Go";
  if (marker != nullptr && !keeps_suffix) {
    frame.name = bare;
    frame.suffix = marker->suffix;
    if (frame.language == "Java") frame.special_type = marker->special_type;
  } else {
    frame.name = name;
  }
  return frame;
}

nlohmann::json studio_flamegraph(const profile::StackTable& stacks,
                                 const StudioTreeOptions& options) {
  Tree tree(stacks);
  tree.keep_largest(options.max_frames);
  return tree.to_json(options);
}

}  // namespace dormant::server::api
