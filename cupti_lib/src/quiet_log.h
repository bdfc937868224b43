// The library's only output: one line on stderr per problem, "dormant_cupti: ...", and never the
// same problem twice. A CUPTI error also turns the library off for good (quiet()): the program
// runs on as if the library were not there.
#pragma once

#include <cupti.h>

namespace dormant::cupti {

// Logs `what` failed with `result`, once per call site text; returns false when result is an
// error.
bool cupti_ok(CUptiResult result, const char* what);
void log_once(const char* text);

// Whether an error has turned the library off.
bool quiet();
void go_quiet();

}  // namespace dormant::cupti
