// What SIGHUP changes in a running agent: its configuration read again (the command line, the
// --config file and the token file, as at start), of which the log level, the token and the TLS
// files (CA bundle, client certificate and key) take effect at once, without ending a session.
// The new settings are checked whole before any of them is applied: a bad file refuses the reload
// and the running settings stay.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <spdlog/common.h>

#include <boost/asio/ssl/context.hpp>

#include "common/result.h"
#include "config/agent_config.h"

namespace dormant::agent {

// The configuration as it reads now, or why it cannot be read (parse_agent_args' answer).
using ConfigReading = std::variant<config::AgentConfig, config::ExitRequest>;

struct ReloadedSettings {
  spdlog::level::level_enum log_level = spdlog::level::info;
  std::string token;
  std::shared_ptr<boost::asio::ssl::context> tls;  // for every client to the server
  // Settings that changed but take effect only when the agent starts again.
  std::vector<std::string> need_restart;
};

// The reloadable settings of `reading`, checked; an error that says what is wrong with it.
Result<ReloadedSettings> reloaded_settings(const config::AgentConfig& running,
                                           const ConfigReading& reading);

}  // namespace dormant::agent
