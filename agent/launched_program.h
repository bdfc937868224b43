// `dormant-agent gpu [options] -- PROGRAM ARGS...`: starts PROGRAM with libdormant_cupti.so
// injected (CUDA_INJECTION64_PATH), profiles it (its CPU samples and its GPU work, as --gpu-mode
// says) from its first instruction to its exit, writes one profile to -o, and exits as PROGRAM did.
#pragma once

#include "config/agent_config.h"

namespace dormant::agent {

// SIGINT and SIGTERM must be blocked in every thread; one that comes is passed on to PROGRAM,
// whose end still ends the profile.
int run_launched_program(const config::AgentConfig& config);

}  // namespace dormant::agent
