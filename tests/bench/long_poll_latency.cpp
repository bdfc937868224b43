// How soon a held heartbeat (a long-poll) brings its agent a command that an operator asks for.
// Each round: a heartbeat that acknowledges its host's current command is sent with ?wait=W, so
// the server holds it; after --pause-ms the clock starts (t0) and `curl` posts a profiling
// request for that host (start and stop in turn, each a new command); the clock stops (t1) when
// the held heartbeat's answer arrives. Both times are read here, on one steady clock. Prints the
// percentiles of t1 - t0, and checks that every held answer carries the command that curl's
// request created.
//
//   long_poll_latency --hold-port PB --request-port PA --ca CA.pem --agent-token T
//                     --operator-token T [--host NAME] [--rounds N] [--pause-ms MS] [--wait S]
//                     [--curl PATH]
//
// The heartbeat goes to PB and the request to PA: two replicas sharing a database, or the same
// server twice. t1 - t0 includes starting curl and its TLS handshake, as an operator's request
// would; the figure "after curl's request was sent" takes off curl's own time_pretransfer (it
// still counts curl's process start, so it is an upper bound).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>  // before Boost.Asio, whose awaitable.hpp needs std::exchange
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

extern char** environ;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Options {
  unsigned short hold_port = 0;
  unsigned short request_port = 0;
  std::string ca;
  std::string agent_token;
  std::string operator_token;
  std::string host = "long-poll-1";
  int rounds = 200;
  int pause_ms = 200;
  int wait_s = 30;
  std::string curl = "curl";
};

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The agent's side: one keep-alive TLS connection, one heartbeat at a time.
class Agent {
 public:
  explicit Agent(const Options& options) : options_(options), tls_(asio::ssl::context::tls_client) {
    tls_.load_verify_file(options.ca);
  }

  void connect() {
    stream_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(io_, tls_);
    SSL_set_tlsext_host_name(stream_->native_handle(), "localhost");
    stream_->set_verify_mode(asio::ssl::verify_peer);
    stream_->set_verify_callback(asio::ssl::host_name_verification("localhost"));
    beast::get_lowest_layer(*stream_).connect(
        asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), options_.hold_port));
    stream_->handshake(asio::ssl::stream_base::client);
  }

  // Sends a heartbeat acknowledging `acknowledged` (null: none yet) and waits for the answer;
  // `answered_at` is read as soon as it is in. Throws on a broken connection.
  bhttp::response<bhttp::string_body> beat(const std::optional<std::string>& acknowledged,
                                           int wait_s, Clock::time_point* answered_at) {
    json body = json::parse(
        R"({"ip_address":"10.0.0.7","service_name":"web","status":"active",
            "timestamp":"2026-11-22T10:00:00.123456","executed_command_ids":[],
            "perf_supported_events":["cycles"],"agent_version":"1.53.1",
            "run_mode":"standalone_executable","namespace":null,"pod_name":null,
            "containers":[]})");
    body["hostname"] = options_.host;
    body["last_command_id"] = acknowledged ? json(*acknowledged) : json(nullptr);
    body["received_command_ids"] = acknowledged ? json::array({*acknowledged}) : json::array();
    std::string target = "/api/metrics/heartbeat";
    if (wait_s > 0) target += "?wait=" + std::to_string(wait_s);
    bhttp::request<bhttp::string_body> request(bhttp::verb::post, target, 11);
    request.set(bhttp::field::host, "localhost");
    request.set(bhttp::field::authorization, "Bearer " + options_.agent_token);
    request.set(bhttp::field::content_type, "application/json");
    request.body() = body.dump();
    request.prepare_payload();
    bhttp::write(*stream_, request);
    bhttp::response<bhttp::string_body> response;
    bhttp::read(*stream_, buffer_, response);
    *answered_at = Clock::now();
    return response;
  }

 private:
  const Options& options_;
  asio::io_context io_;
  asio::ssl::context tls_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> stream_;
  beast::flat_buffer buffer_;
};

struct CurlResult {
  int exit_status = -1;
  std::string output;
  Clock::time_point exited;
};

// Runs curl to post a profiling request; what it printed: the body, then a line with its
// time_pretransfer (seconds).
CurlResult run_curl(const Options& options, const std::string& body) {
  std::string port = std::to_string(options.request_port);
  std::vector<std::string> args = {options.curl,
                                   "-sS",
                                   "--cacert",
                                   options.ca,
                                   "--resolve",
                                   "localhost:" + port + ":127.0.0.1",
                                   "-H",
                                   "Authorization: Bearer " + options.operator_token,
                                   "-H",
                                   "Content-Type: application/json",
                                   "--data-binary",
                                   body,
                                   "-w",
                                   "\n%{time_pretransfer}",
                                   "https://localhost:" + port + "/api/metrics/profile_request"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    std::perror("pipe2");
    std::exit(1);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  pid_t pid = 0;
  int error = posix_spawnp(&pid, options.curl.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (error != 0) {
    std::fprintf(stderr, "cannot start %s: %s\n", options.curl.c_str(), std::strerror(error));
    std::exit(1);
  }
  CurlResult result;
  char chunk[4096];
  for (ssize_t n; (n = ::read(out[0], chunk, sizeof chunk)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    result.output.append(chunk, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exited = Clock::now();
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  size_t rank = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

std::string summary(const std::vector<double>& values) {
  char text[160];
  std::snprintf(text, sizeof text, "p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms",
                percentile(values, 0.50), percentile(values, 0.95), percentile(values, 0.99),
                values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()));
  return text;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--hold-port")
      options.hold_port = static_cast<unsigned short>(std::stoi(value));
    else if (flag == "--request-port")
      options.request_port = static_cast<unsigned short>(std::stoi(value));
    else if (flag == "--ca")
      options.ca = value;
    else if (flag == "--agent-token")
      options.agent_token = value;
    else if (flag == "--operator-token")
      options.operator_token = value;
    else if (flag == "--host")
      options.host = value;
    else if (flag == "--rounds")
      options.rounds = std::stoi(value);
    else if (flag == "--pause-ms")
      options.pause_ms = std::stoi(value);
    else if (flag == "--wait")
      options.wait_s = std::stoi(value);
    else if (flag == "--curl")
      options.curl = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (options.hold_port == 0 || options.request_port == 0 || options.ca.empty() ||
      options.agent_token.empty() || options.operator_token.empty() || options.rounds < 1 ||
      options.wait_s < 1) {
    std::fprintf(stderr,
                 "usage: long_poll_latency --hold-port PB --request-port PA --ca CA.pem "
                 "--agent-token T --operator-token T [--host NAME] [--rounds N] [--pause-ms MS] "
                 "[--wait S] [--curl PATH]\n");
    std::exit(2);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  Agent agent(options);
  std::vector<double> latencies;   // request started -> held answer
  std::vector<double> after_sent;  // curl's request sent (upper bound) -> held answer
  std::vector<double> curl_runs;   // curl started -> curl exited
  int early = 0, wrong_command = 0, failed_requests = 0;
  try {
    agent.connect();
    // What the host has now: the first held heartbeat acknowledges it.
    Clock::time_point at;
    auto first = agent.beat(std::nullopt, 0, &at);
    if (first.result() != bhttp::status::ok) {
      std::fprintf(stderr, "heartbeat: status %u: %s\n", first.result_int(), first.body().c_str());
      return 1;
    }
    json first_answer = json::parse(first.body());
    std::optional<std::string> current;
    if (first_answer["command_id"].is_string()) current = first_answer["command_id"];

    for (int round = 0; round < options.rounds; ++round) {
      Clock::time_point answered_at;
      auto held = std::async(std::launch::async,
                             [&] { return agent.beat(current, options.wait_s, &answered_at); });
      std::this_thread::sleep_for(std::chrono::milliseconds(options.pause_ms));
      if (held.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        // Not held: the server answered before there was anything new.
        ++early;
        auto response = held.get();
        std::fprintf(stderr, "round %d: the heartbeat was answered at once: %s\n", round,
                     response.body().c_str());
        continue;
      }
      bool start = round % 2 == 0;
      json request = {{"service_name", "web"},
                      {"request_type", start ? "start" : "stop"},
                      {"target_hosts", {{options.host, nullptr}}}};
      if (!start) request["stop_level"] = "host";
      Clock::time_point t0 = Clock::now();
      CurlResult curl = run_curl(options, request.dump());
      if (held.wait_for(std::chrono::seconds(options.wait_s + 10)) != std::future_status::ready) {
        std::fprintf(stderr, "round %d: no answer to the held heartbeat in %d s\n", round,
                     options.wait_s + 10);
        std::_Exit(1);  // the worker is stuck in a read; nothing to join
      }
      auto response = held.get();

      size_t last_line = curl.output.rfind('\n');
      std::string curl_body =
          last_line == std::string::npos ? curl.output : curl.output.substr(0, last_line);
      double pretransfer_s =
          last_line == std::string::npos ? 0 : std::atof(curl.output.c_str() + last_line + 1);
      json created = json::parse(curl_body, nullptr, /*allow_exceptions=*/false);
      if (curl.exit_status != 0 || !created.is_object() || !created["command_ids"].is_array() ||
          created["command_ids"].size() != 1) {
        ++failed_requests;
        std::fprintf(stderr, "round %d: curl exited %d: %s\n", round, curl.exit_status,
                     curl.output.c_str());
      }
      json answer = json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
      std::optional<std::string> got;
      if (answer.is_object() && answer["command_id"].is_string()) got = answer["command_id"];
      if (response.result() != bhttp::status::ok || !got || got == current ||
          (created.is_object() && created["command_ids"].is_array() &&
           created["command_ids"].size() == 1 && created["command_ids"][0] != *got)) {
        ++wrong_command;
        std::fprintf(stderr, "round %d: the held answer (%u) is not the new command: %s\n", round,
                     response.result_int(), response.body().c_str());
      }
      if (got) current = got;
      latencies.push_back(ms(answered_at - t0));
      after_sent.push_back(ms(answered_at - t0) - pretransfer_s * 1000);
      curl_runs.push_back(ms(curl.exited - t0));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heartbeat connection: %s\n", e.what());
    return 1;
  }
  std::printf("request -> held answer:      %s (%zu rounds)\n", summary(latencies).c_str(),
              latencies.size());
  std::printf("  after curl sent it (<=):   %s\n", summary(after_sent).c_str());
  std::printf("  curl start -> curl exit:   %s\n", summary(curl_runs).c_str());
  std::printf(
      "  %d answered before the request (not held), %d without the new command, "
      "%d failed requests\n",
      early, wrong_command, failed_requests);
  return early + wrong_command + failed_requests == 0 ? 0 : 1;
}
