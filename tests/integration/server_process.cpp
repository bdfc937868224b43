#include "server_process.h"

#include <cctype>
#include <cstdio>
#include <fstream>

#include <signal.h>

#include "common/atomic_file.h"
#include "common/gzip.h"
#include "common/text.h"

namespace dormant::testing {

namespace fs = std::filesystem;

nlohmann::json HttpReply::json() const {
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

bool ServerProcess::start(const std::vector<std::string>& extra_args, uint16_t port,
                          const std::vector<std::string>& env) {
  auto certs = run_command({GEN_CERTS, (root_ / "certs").string()},
                           deadline_after(std::chrono::seconds(60)));
  if (!certs.ok() || !certs->status.success()) return false;
  if (!fs::exists(root_ / "tokens")) {
    std::ofstream(root_ / "tokens") << "# test tokens\n" << kToken << "\nsecond-token\n";
  }
  SpawnOptions options;
  options.argv = {DORMANT_SERVER,
                  "--listen",
                  "127.0.0.1",
                  "--port",
                  std::to_string(port),
                  "--data-dir",
                  (root_ / "data").string(),
                  "--tokens-file",
                  (root_ / "tokens").string(),
                  "--tls-cert",
                  cert("server.pem").string(),
                  "--tls-key",
                  cert("server.key").string()};
  options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
  options.stderr_to = Redirect::file(root_ / "server.log");
  options.env = env;
  auto process = Subprocess::spawn(options);
  if (!process.ok()) return false;
  process_ = std::move(*process);
  // The first line on stdout says where it listens.
  auto first = process_->next_stdout_line(deadline_after(std::chrono::seconds(30)));
  if (!first.ok() || !*first) return false;
  std::string line(**first);
  size_t colon = line.rfind(':');
  if (colon == std::string::npos) return false;
  port_ = static_cast<uint16_t>(std::stoi(line.substr(colon + 1)));
  return port_ != 0;
}

ExitStatus ServerProcess::stop() {
  if (!process_) return {};
  ::kill(process_->pid(), SIGTERM);
  auto status = process_->wait(deadline_after(std::chrono::seconds(30)));
  ExitStatus result = status.ok() ? *status : process_->terminate(std::chrono::seconds(1));
  process_.reset();
  return result;
}

void ServerProcess::kill() {
  if (!process_) return;
  ::kill(process_->pid(), SIGKILL);
  (void)process_->wait(deadline_after(std::chrono::seconds(30)));
  process_.reset();
}

std::string ServerProcess::url(const std::string& path) const {
  return "https://localhost:" + std::to_string(port_) + path;
}

std::string ServerProcess::log() const { return read_file(root_ / "server.log").value_or(""); }

HttpReply ServerProcess::curl(std::vector<std::string> args, bool with_token) const {
  std::vector<std::string> argv = {"curl", "-sS",           "--max-time",
                                   "20",   "--cacert",      cert("ca.pem").string(),
                                   "-w",   "\n%{http_code}"};
  if (with_token) argv.insert(argv.end(), {"-H", std::string("Authorization: Bearer ") + kToken});
  argv.insert(argv.end(), args.begin(), args.end());
  HttpReply reply;
  auto output = run_command(argv, deadline_after(std::chrono::seconds(60)));
  if (!output.ok()) {
    reply.curl_exit = -1;
    return reply;
  }
  reply.curl_exit = output->status.code;
  std::string& text = output->stdout_text;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t newline = text.rfind('\n');
  if (newline != std::string::npos) {
    reply.status = std::atoi(text.c_str() + newline + 1);
    reply.body = text.substr(0, newline);
  }
  return reply;
}

double ServerProcess::metric(const std::string& name) const {
  std::istringstream lines(get("/metrics").body);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

HttpReply ServerProcess::post_json(const std::string& path, const nlohmann::json& body) const {
  return post_text(path, body.dump());
}

HttpReply ServerProcess::post_text(const std::string& path, const std::string& body) const {
  return curl(
      {"-X", "POST", "-H", "Content-Type: application/json", "--data-binary", body, url(path)});
}

std::string collapsed_profile(const std::string& hostname, const std::string& stacks) {
  nlohmann::json header = {
      {"containers", nlohmann::json::array()},
      {"metadata",
       {{"python_version", ""},
        {"run_mode", "standalone_executable"},
        {"deployment_type", "instances"},
        {"kernel_release", "6.1.0"},
        {"kernel_version", "#1 SMP"},
        {"system_name", "Linux"},
        {"processors", 2},
        {"cpu_model_name", "test"},
        {"memory_capacity_mb", 1024},
        {"hostname", hostname},
        {"os_name", "Debian GNU/Linux"},
        {"os_release", "12"},
        {"libc_type", "glibc"},
        {"libc_version", "2.36"},
        {"hardware_type", "x86_64"},
        {"pid", 42},
        {"mac_address", "02:00:00:00:00:01"},
        {"private_ip", "10.0.0.1"},
        {"spawn_uptime_ms", 1000},
        {"cloud_provider", "Unknown"},
        {"agent_version", "0.1.0"},
        {"spawn_time", "2026-11-22T09:00:00"},
        {"run_arguments", {{"service_name", "web"}}},
        {"current_time", "2026-11-22T10:00:00"},
        {"profiling_mode", "cpu"}}},
      {"metrics", {{"cpu_avg", 10.0}, {"mem_avg", 20.0}}},
  };
  return "# " + header.dump() + "\n" + stacks;
}

nlohmann::json upload_body(const std::string& hostname, const std::string& collapsed) {
  return {{"start_time", "2026-11-22T10:00:00"},
          {"end_time", "2026-11-22T10:01:00"},
          {"hostname", hostname},
          {"profile", collapsed},
          {"cpu_avg", 10.0},
          {"mem_avg", 20.0},
          {"spawn_time", "2026-11-22T09:00:00"},
          {"gpid", ""}};
}

HttpReply ServerProcess::post_upload(const std::string& service, const nlohmann::json& body,
                                     const std::string& api_key) const {
  fs::path file = root_ / "upload.gz";
  std::ofstream(file, std::ios::binary) << gzip(body.dump());
  return curl({"-X", "POST", "-H", "GPROFILER-API-KEY: " + api_key, "-H",
               "GPROFILER-SERVICE-NAME: " + service, "-H", "Content-Encoding: gzip", "-H",
               "Content-Type: application/json", "--data-binary", "@" + file.string(),
               url("/api/v2/profiles")},
              /*with_token=*/false);
}

std::string gzip(const std::string& text) { return gzip_compress(text).value(); }

std::string url_encoded(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

FullReply full_reply(int status, const std::filesystem::path& headers,
                     const std::filesystem::path& body) {
  FullReply reply;
  reply.status = status;
  std::ifstream lines(headers);
  for (std::string line; std::getline(lines, line);) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value(trim(line.substr(colon + 1)));
    auto [held, added] = reply.headers.try_emplace(name, value);
    if (!added) held->second += ", " + value;
  }
  std::ifstream in(body, std::ios::binary);
  reply.body.assign(std::istreambuf_iterator<char>(in), {});
  return reply;
}

}  // namespace dormant::testing
