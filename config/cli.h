// The CLI11 plumbing every Dormant program shares: DORMANT_* environment variables, a config file
// (--config or DORMANT_CONFIG) that gives way to them, and one-line usage errors with exit code 2.
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "config/exit_request.h"

namespace dormant::config {

// An integer option that shows its default and rejects values outside [min, max].
CLI::Option* add_int(CLI::App& app, const std::string& names, int& target, int min, int max,
                     const std::string& description, const char* group);

// --config FILE, defaulting to $DORMANT_CONFIG.
void add_config_file_option(CLI::App& app, const char* group);

// Parses argv with environment and config file; nullopt when the program should go on.
std::optional<ExitRequest> parse_command_line(CLI::App& app, int argc, const char* const* argv);

// "PROGRAM: MESSAGE\nRun 'PROGRAM --help' for the list of flags.\n", exit code 2.
ExitRequest usage_error(const CLI::App& app, const std::string& message);

bool is_http_url(const std::string& url);

}  // namespace dormant::config
