#include "config/cli.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

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

// Edits (insertions, deletions, substitutions) that turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The flag of `app` that `typed` (a --name, perhaps with =value) most likely misspells; "" when
// none is close: at most one edit in a short name, two in a longer one.
std::string closest_flag(const CLI::App& app, std::string_view typed) {
  if (!typed.starts_with("--")) return "";
  typed = typed.substr(2, typed.find('=') == typed.npos ? typed.npos : typed.find('=') - 2);
  size_t allowed = typed.size() < 6 ? 1 : 2;
  std::string best;
  size_t best_distance = allowed + 1;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      size_t distance = edit_distance(typed, name);
      if (distance < best_distance) {
        best_distance = distance;
        best = "--" + name;
      }
    }
  }
  return best;
}

// " (did you mean --x?)" for each unexpected argument that misspells a flag.
std::string suggestions(const CLI::App& app) {
  std::string text;
  for (const std::string& argument : app.remaining()) {
    std::string flag = closest_flag(app, argument);
    if (!flag.empty()) text += " (" + argument + ": did you mean " + flag + "?)";
  }
  return text;
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
  } catch (const CLI::ExtrasError& error) {
    return usage_error(app, error.what() + suggestions(app));
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
