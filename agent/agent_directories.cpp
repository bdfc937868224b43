#include "agent/agent_directories.h"

#include "agent/work_directory.h"
#include "common/private_directory.h"

namespace dormant::agent {

Result<void> prepare_agent_directories(const config::AgentConfig& config) {
  if (auto prepared = prepare_work_directory(config.state_dir); !prepared) {
    return std::move(prepared).take_error();
  }
  if (!config.output_dir.empty()) {
    if (auto made = make_private_directory(config.output_dir); !made) {
      return std::move(made).take_error().with_context("-o");
    }
  }
  return ok();
}

}  // namespace dormant::agent
