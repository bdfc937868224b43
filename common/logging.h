// Process-wide logging on spdlog: one stderr sink that reads well on a terminal and in journald,
// and that replaces every registered secret (tokens, keys) before a line leaves the process.
#pragma once

#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "common/result.h"

namespace dormant::logging {

enum class Format {
  kAuto,      // journald when stderr is connected to it (JOURNAL_STREAM), else terminal
  kTerminal,  // "2026-11-22T10:00:00.123Z info [agent] message"
  kJournal,   // "<6>[agent] message": the priority prefix journald understands, no timestamp
};

struct Options {
  spdlog::level::level_enum level = spdlog::level::info;
  Format format = Format::kAuto;
};

// Accepts trace, debug, info, warn|warning, error, critical, off.
Result<spdlog::level::level_enum> parse_level(std::string_view name);

// Installs the default logger ("dormant") writing to stderr.
void setup(const Options& options);

// A sink writing formatted, redacted lines to `out` (stderr in production, a file in tests).
std::shared_ptr<spdlog::sinks::sink> make_stderr_sink(Format format, std::FILE* out = stderr);

// From now on, every log line has `secret` replaced by "***" (see redact). Empty secrets are
// ignored.
void add_secret(std::string secret);
void clear_secrets();

// `text` with each secret replaced by "***": one of 16 characters or more wherever it is, a
// shorter one where it stands whole (not inside a longer run of letters, digits and "-_:.").
std::string redact(std::string_view text, std::span<const std::string> secrets);

}  // namespace dormant::logging
