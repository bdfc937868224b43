// Must not compile: the server shares the wire protocol with the agent, not its client.
#include "heartbeat/https_client.h"
