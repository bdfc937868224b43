#include "common/logging.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace dormant::logging {
namespace {

std::string logged(Format format, const std::function<void(spdlog::logger&)>& log) {
  std::FILE* out = std::tmpfile();
  {
    spdlog::logger logger("agent", make_stderr_sink(format, out));
    logger.set_level(spdlog::level::trace);
    log(logger);
    logger.flush();
  }
  std::rewind(out);
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), out)) text.append(buffer, n);
  std::fclose(out);
  return text;
}

TEST(Logging, RegisteredSecretsNeverReachTheOutput) {
  add_secret("s3cr3t-token");
  std::string text = logged(Format::kTerminal, [](spdlog::logger& logger) {
    logger.info("heartbeat with Authorization: Bearer {}", "s3cr3t-token");
  });
  clear_secrets();
  EXPECT_EQ(text.find("s3cr3t-token"), std::string::npos) << text;
  EXPECT_NE(text.find("Authorization: Bearer ***"), std::string::npos) << text;
}

TEST(Logging, TerminalFormatHasUtcTimeLevelAndLogger) {
  std::string text =
      logged(Format::kTerminal, [](spdlog::logger& logger) { logger.warn("disk low"); });
  // 2026-11-22T10:00:00.123Z warning [agent] disk low
  ASSERT_GE(text.size(), 25u);
  EXPECT_EQ(text[4], '-');
  EXPECT_EQ(text[10], 'T');
  EXPECT_EQ(text[23], 'Z');
  EXPECT_TRUE(text.ends_with(" warning [agent] disk low\n")) << text;
}

TEST(Logging, JournalFormatCarriesThePriority) {
  std::string text = logged(Format::kJournal, [](spdlog::logger& logger) {
    logger.error("perf died");
    logger.info("started");
    logger.debug("detail");
  });
  EXPECT_EQ(text, "<3>[agent] perf died\n<6>[agent] started\n<7>[agent] detail\n");
}

TEST(Logging, RedactReplacesEveryWholeOccurrence) {
  std::vector<std::string> secrets = {"abc", ""};
  EXPECT_EQ(redact("abc abc/abc?key=abc&x=abc", secrets), "*** ***/***?key=***&x=***");
  EXPECT_EQ(redact("Bearer abc\nabc", secrets), "Bearer ***\n***");
  EXPECT_EQ(redact("abcabc xabc abc-d", secrets), "abcabc xabc abc-d") << "not whole";
  EXPECT_EQ(redact("nothing here", secrets), "nothing here");
  std::vector<std::string> long_secret = {"0123456789abcdef"};
  EXPECT_EQ(redact("x0123456789abcdefx. 0123456789abcdef.", long_secret), "x***x. ***.")
      << "a long secret goes wherever it is";
}

// Issue 22, agent 8: a short token garbled every timestamp and number of the log.
TEST(Logging, AShortTokenLeavesTimesAndNumbersAlone) {
  std::vector<std::string> secrets = {"26"};
  EXPECT_EQ(redact("2026-11-26T10:26:00.026Z token=26, pid 4264 at 10.0.26.1", secrets),
            "2026-11-26T10:26:00.026Z token=***, pid 4264 at 10.0.26.1");
}

TEST(Logging, LevelNames) {
  EXPECT_EQ(parse_level("debug").value(), spdlog::level::debug);
  EXPECT_EQ(parse_level("warning").value(), spdlog::level::warn);
  EXPECT_EQ(parse_level("warn").value(), spdlog::level::warn);
  auto bad = parse_level("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("unknown log level 'loud'"), std::string::npos);
}

}  // namespace
}  // namespace dormant::logging
