// A real dormant-server for integration tests: a test CA, a tokens file and a data directory of
// its own, started on a free loopback port; and curl as the client, as people and scripts use it.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"

namespace dormant::testing {

inline constexpr const char* kToken = "test-token-0123456789";

// What curl got: the HTTP status (0 when there was none) and the body; curl's exit code.
struct HttpReply {
  int status = 0;
  std::string body;
  int curl_exit = 0;
  nlohmann::json json() const;
};

class ServerProcess {
 public:
  // `root` holds certs/, data/ and tokens; it must exist and outlive the server.
  explicit ServerProcess(std::filesystem::path root) : root_(std::move(root)) {}
  ~ServerProcess() { kill(); }

  // Starts dormant-server with these extra flags on `port` (0: a free one); false when it did
  // not come up.
  bool start(const std::vector<std::string>& extra_args = {}, uint16_t port = 0,
             const std::vector<std::string>& env = {});
  // SIGTERM, then waits; the exit status.
  ExitStatus stop();
  // SIGKILL, no goodbye.
  void kill();

  uint16_t port() const { return port_; }
  pid_t pid() const { return process_ ? process_->pid() : 0; }
  std::string url(const std::string& path) const;
  std::filesystem::path cert(const std::string& name) const { return root_ / "certs" / name; }
  std::string log() const;

  // curl with the test CA and, unless `args` says otherwise, the bearer token.
  HttpReply curl(std::vector<std::string> args, bool with_token = true) const;
  HttpReply get(const std::string& path) const { return curl({url(path)}); }
  HttpReply post_json(const std::string& path, const nlohmann::json& body) const;
  HttpReply post_text(const std::string& path, const std::string& body) const;
  // An upload as gProfiler's agent posts it: `body` gzip'd, with its API key and service headers.
  HttpReply post_upload(const std::string& service, const nlohmann::json& body,
                        const std::string& api_key) const;
  // A counter of its /metrics; -1 when it has none of that name.
  double metric(const std::string& name) const;

 private:
  std::filesystem::path root_;
  std::unique_ptr<Subprocess> process_;
  uint16_t port_ = 0;
};

// A profile upload body as the stock gProfiler agent sends it (times as naive UTC text), not yet
// compressed.
nlohmann::json upload_body(const std::string& hostname, const std::string& collapsed);
// A collapsed profile with a header Studio accepts and the given stack lines.
std::string collapsed_profile(const std::string& hostname, const std::string& stacks);
std::string gzip(const std::string& text);
// A query value percent-encoded, as browsers write one.
std::string url_encoded(const std::string& text);

// What `curl -D headers -o body` got: its status, headers (names lower-case, repeated ones joined
// by ", ") and body.
struct FullReply {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
};
FullReply full_reply(int status, const std::filesystem::path& headers,
                     const std::filesystem::path& body);

}  // namespace dormant::testing
