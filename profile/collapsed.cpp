#include "profile/collapsed.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>
#include <vector>

#include "common/json_text.h"

namespace dormant::profile {
namespace {

// The application-metadata index of every stack: index 0 of the header's
// "application_metadata" list is always null, meaning "none".
constexpr std::string_view kNoApplicationMetadata = "0";

Error line_error(size_t line_number, const std::string& what) {
  return Error::parse("line " + std::to_string(line_number) + ": " + what);
}

// The fields before a stack's frames: [index;]container;comm. gProfiler leaves the index out when
// its header says "application_metadata_enabled": false (--disable-application-metadata).
struct LineLayout {
  bool has_index = true;
  size_t prefix_fields() const { return has_index ? 3 : 2; }
};

bool says_no_index(const nlohmann::json& header) {
  auto enabled = header.find("application_metadata_enabled");
  return enabled != header.end() && enabled->is_boolean() && !enabled->get<bool>();
}

// Calls visit(line, line_number) for each stack line after the header (its '\r' dropped, empty
// lines skipped) while visit returns true; false when it stopped.
template <typename Visit>
bool for_each_stack_line(std::string_view text, Visit&& visit) {
  size_t newline = text.find('\n');
  for (size_t line_number = 2; newline != std::string_view::npos; ++line_number) {
    size_t begin = newline + 1;
    newline = text.find('\n', begin);
    std::string_view line = text.substr(begin, newline - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && !visit(line, line_number)) return false;
  }
  return true;
}

// Whether each stack line opens with digits and ';'. Dormant's agents before 2026-11 wrote
// "application_metadata_enabled": false above lines that hold the index: a profile whose every
// line starts with one is read as indexed (a gProfiler profile without the index whose every line
// names a container by digits alone is the one it would misread).
bool every_line_opens_with_an_index(std::string_view text) {
  return for_each_stack_line(text, [](std::string_view line, size_t) {
    size_t digits = 0;
    while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
    return digits > 0 && digits < line.size() && line[digits] == ';';
  });
}

Result<void> read_stack_line(std::string_view line, size_t line_number, LineLayout layout,
                             StackTable& stacks, std::vector<std::string_view>& fields) {
  size_t space = line.rfind(' ');
  if (space == std::string_view::npos) return line_error(line_number, "no sample count at the end");
  std::string_view count_text = line.substr(space + 1);
  uint64_t count = 0;
  auto [end, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || end != count_text.data() + count_text.size() || count == 0) {
    return line_error(line_number, std::string("'").append(count_text) + "' is not a sample count");
  }
  fields.clear();
  std::string_view stack = line.substr(0, space);
  for (size_t begin = 0;;) {
    size_t semicolon = stack.find(';', begin);
    fields.push_back(stack.substr(begin, semicolon - begin));
    if (semicolon == std::string_view::npos) break;
    begin = semicolon + 1;
  }
  const size_t prefix = layout.prefix_fields();
  if (fields.size() < prefix) {
    return line_error(line_number, layout.has_index
                                       ? "expected 'index;container;comm;frames... count'"
                                       : "expected 'container;comm;frames... count'");
  }
  if (fields.size() - prefix > kMaxStackDepth) {
    return line_error(line_number, "more than " + std::to_string(kMaxStackDepth) + " frames");
  }
  if (count > std::numeric_limits<uint64_t>::max() - stacks.total_samples()) {
    return line_error(line_number, "the sample counts add up to more than 2^64");
  }
  if (layout.has_index) {
    const std::string_view index = fields[0];
    if (index.empty() || !std::all_of(index.begin(), index.end(), ::isdigit)) {
      return line_error(line_number,
                        std::string("'").append(index) + "' is not an application-metadata index");
    }
  }
  stacks.add(fields[prefix - 2], fields[prefix - 1], std::span(fields).subspan(prefix), count);
  return ok();
}

}  // namespace

std::string sanitize_frame(std::string_view frame) {
  std::string clean(frame);
  for (char& c : clean) {
    if (c == ';') c = ',';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return clean;
}

std::string write_collapsed(const StackTable& stacks, const nlohmann::json& header) {
  const LineLayout layout{!says_no_index(header)};
  std::vector<std::pair<std::string, uint64_t>> lines;
  lines.reserve(stacks.distinct_stacks());
  stacks.for_each([&](const StackView& stack) {
    std::string line;
    if (layout.has_index) {
      line += kNoApplicationMetadata;
      line += ';';
    }
    line += sanitize_frame(stack.container);
    line += ';';
    line += sanitize_frame(stack.comm);
    for (StringId id : stack.frame_ids) {
      line += ';';
      line += sanitize_frame(stacks.string(id));
    }
    lines.emplace_back(std::move(line), stack.count);
  });
  std::sort(lines.begin(), lines.end());

  std::string text = "# " + json_text(header) + "\n";
  for (const auto& [stack, count] : lines) {
    text += stack;
    text += ' ';
    text += std::to_string(count);
    text += '\n';
  }
  return text;
}

Result<CollapsedProfile> read_collapsed(std::string_view text) {
  CollapsedProfile profile;
  std::string_view first = text.substr(0, text.find('\n'));
  if (!first.starts_with("#")) return line_error(1, "the profile must start with '# {header}'");
  profile.header = nlohmann::json::parse(first.substr(1), nullptr, /*allow_exceptions=*/false);
  if (profile.header.is_discarded() || !profile.header.is_object()) {
    return line_error(1, "the profile header after '#' is not a JSON object");
  }

  const LineLayout layout{!says_no_index(profile.header) || every_line_opens_with_an_index(text)};
  std::vector<std::string_view> fields;
  std::optional<Error> error;
  for_each_stack_line(text, [&](std::string_view line, size_t line_number) {
    auto read = read_stack_line(line, line_number, layout, profile.stacks, fields);
    if (read.ok()) return true;
    error = std::move(read).take_error();
    return false;
  });
  if (error) return *std::move(error);
  return profile;
}

}  // namespace dormant::profile
