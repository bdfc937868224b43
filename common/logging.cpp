#include "common/logging.h"

#include <cctype>
#include <cstdlib>
#include <mutex>
#include <vector>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <sys/stat.h>

namespace dormant::logging {
namespace {

std::mutex secrets_mutex;
std::vector<std::string>& secrets() {
  static std::vector<std::string> registered;
  return registered;
}

// journald sets JOURNAL_STREAM=<dev>:<inode> for the stream it reads (sd_journal_stream_fd(3)).
bool stderr_is_journal() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return std::string(stream) == std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    default:
      return 2;
  }
}

class RedactingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  RedactingSink(Format format, std::FILE* out) : journal_(format == Format::kJournal), out_(out) {
    set_pattern_(journal_ ? "[%n] %v" : "%Y-%m-%dT%H:%M:%S.%eZ %l [%n] %v");
  }

 protected:
  void set_pattern_(const std::string& pattern) override {
    set_formatter_(std::make_unique<spdlog::pattern_formatter>(
        pattern, spdlog::pattern_time_type::utc, std::string("\n")));
  }

  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    std::string line;
    {
      std::lock_guard lock(secrets_mutex);
      line = redact(std::string_view(formatted.data(), formatted.size()), secrets());
    }
    if (journal_) {
      std::string priority = "<";  // appended to: g++ 12 warns (-Wrestrict) of "<" + string&&
      priority += std::to_string(syslog_priority(msg.level));
      priority += '>';
      line.insert(0, priority);
    }
    std::fwrite(line.data(), 1, line.size(), out_);
  }

  void flush_() override { std::fflush(out_); }

 private:
  bool journal_;
  std::FILE* out_;
};

}  // namespace

Result<spdlog::level::level_enum> parse_level(std::string_view name) {
  if (name == "warn" || name == "warning") return spdlog::level::warn;
  for (int level = spdlog::level::trace; level <= spdlog::level::off; ++level) {
    auto candidate = static_cast<spdlog::level::level_enum>(level);
    if (name == spdlog::level::to_string_view(candidate)) return candidate;
  }
  return Error::invalid_argument("unknown log level '" + std::string(name) +
                                 "' (expected trace, debug, info, warn, error, critical or off)");
}

std::shared_ptr<spdlog::sinks::sink> make_stderr_sink(Format format, std::FILE* out) {
  if (format == Format::kAuto) format = stderr_is_journal() ? Format::kJournal : Format::kTerminal;
  return std::make_shared<RedactingSink>(format, out);
}

void setup(const Options& options) {
  auto logger = std::make_shared<spdlog::logger>("dormant", make_stderr_sink(options.format));
  logger->set_level(options.level);
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(std::move(logger));
}

void add_secret(std::string secret) {
  if (secret.empty()) return;
  std::lock_guard lock(secrets_mutex);
  secrets().push_back(std::move(secret));
}

void clear_secrets() {
  std::lock_guard lock(secrets_mutex);
  secrets().clear();
}

namespace {

// A short secret is replaced only where it stands whole, so that it does not garble the times,
// dates, addresses and numbers around it; a long one, which no such text holds by chance,
// wherever it is.
constexpr size_t kLongSecret = 16;

bool is_word_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == ':' ||
         c == '.';
}

}  // namespace

std::string redact(std::string_view text, std::span<const std::string> secret_list) {
  std::string out(text);
  for (const std::string& secret : secret_list) {
    if (secret.empty()) continue;
    for (size_t at = out.find(secret); at != std::string::npos;) {
      size_t end = at + secret.size();
      bool whole =
          secret.size() >= kLongSecret || ((at == 0 || !is_word_character(out[at - 1])) &&
                                           (end == out.size() || !is_word_character(out[end])));
      if (whole) {
        out.replace(at, secret.size(), "***");
        at = out.find(secret, at + 3);
      } else {
        at = out.find(secret, at + 1);
      }
    }
  }
  return out;
}

}  // namespace dormant::logging
