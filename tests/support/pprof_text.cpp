#include "tests/support/pprof_text.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "common/gzip.h"
#include "common/subprocess.h"
#include "common/text.h"

namespace dormant::testing {
namespace {

// protoc's text format quotes strings C-style, with octal escapes for bytes outside ASCII.
std::string unquote(std::string_view quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    char c = quoted[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    char next = quoted[++i];
    if (next >= '0' && next <= '7') {
      int value = 0;
      for (int digits = 0; digits < 3 && quoted[i] >= '0' && quoted[i] <= '7'; ++digits, ++i) {
        value = value * 8 + (quoted[i] - '0');
      }
      --i;
      out += static_cast<char>(value);
    } else {
      out += next == 'n' ? '\n' : next == 't' ? '\t' : next == 'r' ? '\r' : next;
    }
  }
  return out;
}

struct Block {
  std::string name;
  std::map<std::string, std::vector<std::string>> fields;
  std::vector<Block> children;
};

// The text format as a tree of blocks: "name {" opens one, "}" closes it, "key: value" is a field.
Block parse_text(const std::string& text) {
  std::vector<Block> open(1);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::string_view trimmed = trim(line);
    if (trimmed.empty()) continue;
    if (trimmed.ends_with("{")) {
      open.push_back({std::string(trim(trimmed.substr(0, trimmed.size() - 1))), {}, {}});
    } else if (trimmed == "}") {
      Block done = std::move(open.back());
      open.pop_back();
      open.back().children.push_back(std::move(done));
    } else {
      size_t colon = trimmed.find(':');
      open.back().fields[std::string(trimmed.substr(0, colon))].push_back(
          std::string(trim(trimmed.substr(colon + 1))));
    }
  }
  return std::move(open.front());
}

int64_t number(const Block& block, const std::string& field) {
  auto found = block.fields.find(field);
  return found == block.fields.end() ? 0 : std::stoll(found->second.front());
}

}  // namespace

Result<DecodedPprof> decode_pprof(std::string_view gzipped) {
  auto bytes = gzip_decompress_at_most(gzipped, 256 << 20);
  if (!bytes) return std::move(bytes).take_error();
  std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("pprof-" + std::to_string(::getpid()) + ".pb");
  std::ofstream(file, std::ios::binary) << *bytes;
  auto decoded = run_command({"sh", "-c",
                              "exec protoc --decode=perftools.profiles.Profile -I \"$1\" "
                              "\"$1/profile.proto\" < \"$2\"",
                              "decode", DORMANT_PPROF_PROTO_DIR, file.string()},
                             deadline_after(std::chrono::seconds(60)), 256 << 20);
  std::filesystem::remove(file);
  if (!decoded) return std::move(decoded).take_error();
  if (!decoded->status.success()) {
    return Error::parse("protoc --decode: " + decoded->status.describe() + ": " +
                        decoded->stderr_text);
  }
  DecodedPprof pprof;
  pprof.text = decoded->stdout_text;
  Block root = parse_text(pprof.text);
  for (const std::string& quoted : root.fields["string_table"])
    pprof.strings.push_back(unquote(quoted));
  auto string_at = [&](int64_t index) {
    return index >= 0 && static_cast<size_t>(index) < pprof.strings.size()
               ? pprof.strings[static_cast<size_t>(index)]
               : "<bad string index " + std::to_string(index) + ">";
  };
  pprof.period = number(root, "period");
  pprof.time_nanos = number(root, "time_nanos");
  pprof.duration_nanos = number(root, "duration_nanos");
  std::map<int64_t, std::string> function_names;
  std::map<int64_t, int64_t> location_functions;
  for (const Block& child : root.children) {
    if (child.name == "function") {
      function_names[number(child, "id")] = string_at(number(child, "name"));
      ++pprof.functions;
    } else if (child.name == "location") {
      for (const Block& line : child.children) {
        location_functions[number(child, "id")] = number(line, "function_id");
      }
      ++pprof.locations;
    } else if (child.name == "sample_type" && pprof.sample_type.empty()) {
      pprof.sample_type = string_at(number(child, "type")) + "/" + string_at(number(child, "unit"));
    } else if (child.name == "period_type") {
      pprof.period_type = string_at(number(child, "type")) + "/" + string_at(number(child, "unit"));
    }
  }
  for (const Block& child : root.children) {
    if (child.name != "sample") continue;
    std::map<std::string, std::string> labels;
    for (const Block& label : child.children) {
      labels[string_at(number(label, "key"))] = string_at(number(label, "str"));
    }
    std::string key;
    for (const auto& [name, value] : labels) key += (key.empty() ? "" : ",") + name + "=" + value;
    key += "|";
    const auto& ids = child.fields.count("location_id") ? child.fields.at("location_id")
                                                        : std::vector<std::string>();
    for (auto id = ids.rbegin(); id != ids.rend(); ++id) {
      if (id != ids.rbegin()) key += ";";
      key += function_names[location_functions[std::stoll(*id)]];
    }
    pprof.stacks[key] += number(child, "value");
  }
  return pprof;
}

}  // namespace dormant::testing
