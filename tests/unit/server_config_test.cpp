#include "config/server_config.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

namespace dormant::config {
namespace {

std::variant<ServerConfig, ExitRequest> parse(std::vector<std::string> args) {
  std::vector<const char*> argv = {"dormant-server"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return parse_server_args(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  auto parsed = parse(std::move(args));
  const auto* exit = std::get_if<ExitRequest>(&parsed);
  if (exit == nullptr) return "accepted";
  EXPECT_EQ(exit->exit_code, 2);
  return exit->text;
}

class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("dormant-server-config-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    for (const char* name : {"tokens", "cert.pem", "key.pem"}) std::ofstream(dir_ / name) << "x\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const char* name) { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

// --help says how a tokens file is written and where a token may be presented.
TEST_F(ServerConfigTest, HelpGivesTheTokensFilesFormat) {
  auto parsed = parse({"--help"});
  const auto* exit = std::get_if<ExitRequest>(&parsed);
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_NE(exit->text.find("one 'TOKEN ROLE' per line"), std::string::npos) << exit->text;
  EXPECT_NE(exit->text.find("password of HTTP Basic"), std::string::npos);
}

TEST_F(ServerConfigTest, TlsWithTokensIsTheDefault) {
  auto parsed = parse({"--tls-cert", file("cert.pem"), "--tls-key", file("key.pem"),
                       "--tokens-file", file("tokens"), "--port", "9000"});
  ASSERT_TRUE(std::holds_alternative<ServerConfig>(parsed)) << std::get<ExitRequest>(parsed).text;
  const auto& config = std::get<ServerConfig>(parsed);
  EXPECT_EQ(config.port, 9000);
  EXPECT_FALSE(config.insecure_http);
  EXPECT_EQ(config.read_timeout_s, 10);
  EXPECT_EQ(config.max_body_bytes, 4 << 20);
}

TEST_F(ServerConfigTest, PlainHttpOnlyWhenAskedAndNeverWithoutTokens) {
  EXPECT_NE(error_of({"--tokens-file", file("tokens")}).find("TLS needs --tls-cert and --tls-key"),
            std::string::npos);
  EXPECT_EQ(error_of({"--insecure-http", "--tokens-file", file("tokens")}), "accepted");
  EXPECT_NE(error_of({"--insecure-http"}).find("--tokens-file is required"), std::string::npos);
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--tls-client-ca",
                      file("cert.pem")})
                .find("--tls-client-ca needs TLS"),
            std::string::npos);
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--port", "70000"})
                .find("--port: Value 70000 not in range 0 to 65535"),
            std::string::npos);
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"),
                      "--bind-hostname-to-certificate"})
                .find("--bind-hostname-to-certificate needs --tls-client-ca"),
            std::string::npos);
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--database", "nope"})
                .find("--database takes a PostgreSQL URL"),
            std::string::npos);
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--long-poll-max", "200"})
                .find("--long-poll-max must be shorter than --idle-timeout"),
            std::string::npos);
  EXPECT_NE(
      error_of({"--insecure-http", "--tokens-file", file("tokens"), "--tls-min-version", "1.1"})
          .find("--tls-min-version"),
      std::string::npos);
  EXPECT_EQ(
      error_of({"--insecure-http", "--tokens-file", file("tokens"), "--tls-min-version", "1.3"}),
      "accepted");
}

}  // namespace
}  // namespace dormant::config

namespace dormant::config {
namespace {

TEST_F(ServerConfigTest, FlamegraphLimitsHaveDefaultsAndBounds) {
  auto parsed = parse({"--insecure-http", "--tokens-file", file("tokens")});
  ASSERT_TRUE(std::holds_alternative<ServerConfig>(parsed));
  EXPECT_EQ(std::get<ServerConfig>(parsed).svg_max_frames, 50000);
  EXPECT_EQ(std::get<ServerConfig>(parsed).svg_cache_mb, 64);
  EXPECT_EQ(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--svg-max-frames", "200",
                      "--svg-cache-mb", "0"}),
            "accepted");
  EXPECT_NE(error_of({"--insecure-http", "--tokens-file", file("tokens"), "--svg-max-frames", "0"})
                .find("--svg-max-frames"),
            std::string::npos);
}

}  // namespace
}  // namespace dormant::config
