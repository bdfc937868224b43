// A CLI11 config-file reader that reports problems with their line number and gives way to
// environment variables, so that the precedence is command line > environment > file > default.
#pragma once

#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace dormant::config {

class ConfigFileReader : public CLI::ConfigTOML {
 public:
  explicit ConfigFileReader(const CLI::App& app) : app_(app) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;

  // "config file F, line N" for an option the file set, or "" if the file did not set it.
  std::string origin_of(const std::string& option_name) const;

 private:
  std::string file_name() const;

  const CLI::App& app_;
  mutable std::map<std::string, int> lines_;  // option name → line that set it
};

}  // namespace dormant::config
