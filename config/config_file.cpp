#include "config/config_file.h"

#include <cctype>
#include <cstdlib>
#include <sstream>

#include "common/text.h"

namespace dormant::config {
namespace {

bool is_option_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string ConfigFileReader::file_name() const {
  const CLI::Option* option = const_cast<CLI::App&>(app_).get_config_ptr();
  if (option == nullptr) return "config file";
  return "config file " + option->as<std::string>();
}

std::string ConfigFileReader::origin_of(const std::string& option_name) const {
  auto found = lines_.find(option_name);
  if (found == lines_.end()) return {};
  return file_name() + ", line " + std::to_string(found->second);
}

std::vector<CLI::ConfigItem> ConfigFileReader::from_config(std::istream& input) const {
  lines_.clear();

  std::stringstream accepted;
  std::string raw;
  for (int line_number = 1; std::getline(input, raw); ++line_number) {
    std::string line(trim(raw));
    accepted << raw << '\n';
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') continue;  // a section header
    size_t equals = line.find('=');
    std::string name(trim(std::string_view(line).substr(0, equals)));
    if (equals == std::string::npos || !is_option_name(name)) {
      throw CLI::ConfigError(file_name() + ", line " + std::to_string(line_number) +
                             ": expected 'name = value', got '" + line + "'");
    }
    const CLI::Option* option = app_.get_option_no_throw("--" + name);
    if (option == nullptr || !option->get_configurable()) {
      throw CLI::ConfigError(file_name() + ", line " + std::to_string(line_number) +
                             ": unknown option '" + name + "'");
    }
    if (trim(std::string_view(line).substr(equals + 1)).empty()) {
      throw CLI::ConfigError(file_name() + ", line " + std::to_string(line_number) + ": '" + name +
                             "' has no value");
    }
    lines_[name] = line_number;
  }

  std::vector<CLI::ConfigItem> items;
  for (CLI::ConfigItem& item : CLI::ConfigTOML::from_config(accepted)) {
    if (item.name == "++" || item.name == "--") continue;  // sections carry no meaning here
    item.parents.clear();
    const CLI::Option* option = app_.get_option_no_throw("--" + item.name);
    const std::string& env = option->get_envname();
    if (!env.empty() && std::getenv(env.c_str()) != nullptr) {  // the environment wins
      lines_.erase(item.name);
      continue;
    }
    items.push_back(std::move(item));
  }
  return items;
}

}  // namespace dormant::config
