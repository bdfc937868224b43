#include "config/cli.h"

#include <cctype>
#include <cstdlib>
#include <memory>

#include "config/config_file.h"

namespace dormant::config {
namespace {

std::string env_name_for(const std::string& long_name) {
  std::string env = "DORMANT_";
  for (char c : long_name) env += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return env;
}

// Every option with a long name can come from DORMANT_<NAME> too.
void add_environment_names(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const auto& names = option->get_lnames();
    if (names.empty() || names[0] == "help" || names[0] == "version" || names[0] == "config") {
      continue;
    }
    option->envname(env_name_for(names[0]));
  }
}

}  // namespace

CLI::Option* add_int(CLI::App& app, const std::string& names, int& target, int min, int max,
                     const std::string& description, const char* group) {
  return app.add_option(names, target, description)
      ->capture_default_str()
      ->check(CLI::Range(min, max))
      ->group(group);
}

void add_config_file_option(CLI::App& app, const char* group) {
  // CLI11 reads the config file before it looks at the environment, so DORMANT_CONFIG is
  // applied here, as the default that a --config on the command line overrides.
  const char* config_from_env = std::getenv("DORMANT_CONFIG");
  app.set_config("--config", config_from_env != nullptr ? config_from_env : "",
                 "Read flags from this file (one 'name = value' per line)",
                 /*config_required=*/config_from_env != nullptr)
      ->group(group);
}

ExitRequest usage_error(const CLI::App& app, const std::string& message) {
  const std::string& program = app.get_name();
  return {2, program + ": " + message + "\nRun '" + program + " --help' for the list of flags.\n"};
}

std::optional<ExitRequest> parse_command_line(CLI::App& app, int argc, const char* const* argv) {
  add_environment_names(app);
  auto reader = std::make_shared<ConfigFileReader>(app);
  app.config_formatter(reader);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return ExitRequest{0, app.help()};
  } catch (const CLI::CallForVersion&) {
    return ExitRequest{0, app.version() + "\n"};
  } catch (const CLI::ParseError& error) {
    std::string message = error.what();
    for (const CLI::Option* option : app.get_options()) {
      const auto& names = option->get_lnames();
      if (names.empty() || message.find("--" + names[0]) == std::string::npos) continue;
      if (std::string origin = reader->origin_of(names[0]); !origin.empty()) {
        message += " (" + origin + ")";
      }
      break;
    }
    return usage_error(app, message);
  }
  return std::nullopt;
}

bool is_http_url(const std::string& url) {
  return url.starts_with("https://") || url.starts_with("http://");
}

}  // namespace dormant::config
