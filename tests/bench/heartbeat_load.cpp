// Load generator for dormant-server: N simulated agents, each on its own keep-alive TLS
// connection, heartbeating as gProfiler does (docs/protocol.md). Prints the sustained rate and the
// latency percentiles.
//
//   heartbeat_load --port P[,P...] --ca CA.pem --token T --agents N [--hosts H] [--rate R]
//                  [--seconds S] [--warmup S] [--wait W]
//
// Several ports (replicas of the server) share the agents round-robin. --hosts H (default N)
// spreads the heartbeats over H host names: each connection takes its turn with every H/N of them.
//
// With --rate R (heartbeats per second, all agents together) every agent sends on a fixed
// schedule, open loop, and latency counts from when a heartbeat was due, not from when it was
// sent: a server that falls behind cannot hide it by slowing the client down. --rate 0 is a
// closed loop: each agent sends its next heartbeat as soon as the answer to the last one arrives,
// which measures the most the server can take.
//
// --processes P gives every host an inventory of P processes, in P/5 containers of P/5 pods
// (5 processes each), spread over 20 namespaces and 50 workloads as a Kubernetes node reports
// them: the same inventory on every heartbeat of a host, as a fleet whose pods do not move.
// --digests 1 then does as our agent does: once the server has answered a host's heartbeat with
// the containers_digest of its list, that host's heartbeats carry the digest in place of the list
// (gProfiler's agent, and --digests 0, send the list every time).
//
// Each agent sends its first heartbeat as soon as its connection is up (the server closes a new
// connection that sends nothing for a few seconds, less than it may take to open thousands);
// without --wait its answer comes before the measurement.
//
// --wait W (with --rate 0) sends the heartbeats as long-polls (?wait=W): with no commands for
// their hosts the server holds each for W seconds. Every answer counts, whenever it comes, and is
// sorted into those held for the full wait and those answered sooner.
// `--agents 10000 --rate 0 --wait 30 --seconds 1 --warmup 0` holds one heartbeat on each of
// 10,000 connections, then exits.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio, whose awaitable.hpp needs std::exchange
#include <vector>

#include <sys/resource.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<unsigned short> ports;
  std::string ca;
  std::string token;
  int agents = 100;
  int hosts = 0;       // 0: one per agent
  double rate = 5000;  // per second, all agents together; 0: closed loop
  double seconds = 10;
  double warmup = 3;
  int wait = 0;       // seconds; 0: plain heartbeats
  int processes = 0;  // per host, in the heartbeat's containers[]
  bool digests = false;
  int concurrent_handshakes = 256;
};

struct Totals {
  std::vector<double> latencies_ms;  // measured window only (--wait: all)
  uint64_t answered = 0;             // measured window only (--wait: all)
  uint64_t errors = 0;
  uint64_t held_full = 0;   // --wait: answered after the whole wait
  uint64_t held_short = 0;  // --wait: answered sooner
  int connected = 0;
  Clock::time_point measure_from;
  Clock::time_point measure_until;
};

class Agent : public std::enable_shared_from_this<Agent> {
 public:
  Agent(asio::io_context& io, asio::ssl::context& tls, const Options& options, Totals& totals,
        int index)
      : stream_(io, tls), timer_(io), options_(options), totals_(totals) {
    int hosts = options.hosts > 0 ? options.hosts : options.agents;
    for (int host = index; host < hosts; host += options.agents) hosts_.push_back(host);
    if (hosts_.empty()) hosts_.push_back(index % hosts);
    for (int host : hosts_) requests_.push_back(make(host, containers(host)));
    by_digest_.resize(requests_.size());
    if (options.rate > 0) {
      interval_ = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(options.agents / options.rate));
    }
    // Spread evenly over one interval, so the load is steady from the start.
    offset_ = interval_ * index / std::max(1, options.agents);
  }

  void connect(asio::ip::tcp::endpoint endpoint, std::function<void()> done) {
    auto self = shared_from_this();
    SSL_set_tlsext_host_name(stream_.native_handle(), "localhost");
    stream_.set_verify_mode(asio::ssl::verify_peer);
    stream_.set_verify_callback(asio::ssl::host_name_verification("localhost"));
    beast::get_lowest_layer(stream_).async_connect(endpoint, [this, self,
                                                              done](beast::error_code error) {
      if (error) return fail(error, done);
      // As agents' HTTP clients do (ours, and urllib3 under gProfiler's).
      beast::error_code ignored;
      beast::get_lowest_layer(stream_).socket().set_option(asio::ip::tcp::no_delay(true), ignored);
      stream_.async_handshake(asio::ssl::stream_base::client,
                              [this, self, done](beast::error_code error) {
                                if (error) return fail(error, done);
                                ++totals_.connected;
                                if (options_.wait == 0) return introduce(done);
                                done();
                                send();
                              });
    });
  }

  // A first heartbeat, answered before the measurement begins: the server closes a connection
  // that has sent nothing for a few seconds, less than opening thousands takes.
  void introduce(std::function<void()> done) {
    auto self = shared_from_this();
    bhttp::async_write(stream_, requests_[0], [this, self, done](beast::error_code error, size_t) {
      if (error) return fail(error, done);
      response_ = {};
      bhttp::async_read(stream_, buffer_, response_,
                        [this, self, done](beast::error_code error, size_t) {
                          if (error) return fail(error, done);
                          if (options_.digests) follow_digest(0);
                          done();
                        });
    });
  }

  void run(Clock::time_point start) {
    due_ = start + offset_;
    schedule();
  }

 private:
  void fail(beast::error_code error, const std::function<void()>& done) {
    if (totals_.errors++ < 5) std::fprintf(stderr, "connection: %s\n", error.message().c_str());
    done();
  }

  void schedule() {
    if (due_ >= totals_.measure_until) return;
    auto self = shared_from_this();
    timer_.expires_at(due_);
    timer_.async_wait([this, self](beast::error_code) { send(); });
  }

  // The host's containers member.
  std::string containers(int host) const {
    std::string list = R"("containers":[)";
    int pods = options_.processes / 5;
    for (int pod = 0; pod < pods; ++pod) {
      int workload = (host * pods + pod) % 50;
      std::string pod_name = "w" + std::to_string(workload) + "-7f8d9cb4d-" + std::to_string(host) +
                             "x" + std::to_string(pod);
      if (pod > 0) list += ",";
      list += R"({"container_id":")" + std::to_string(host) + "-" + std::to_string(pod) +
              R"(","container_name":"app","runtime":"containerd","namespace":"ns-)" +
              std::to_string(workload % 20) + R"(","pod_name":")" + pod_name +
              R"(","workload_name":"w)" + std::to_string(workload) +
              R"(","workload_kind":"Deployment","processes":[)";
      for (int p = 0; p < 5; ++p) {
        if (p > 0) list += ",";
        list += R"({"pid":)" + std::to_string(1000 + pod * 5 + p) + R"(,"process_name":"java"})";
      }
      list += "]}";
    }
    return list + "]";
  }

  // The heartbeat of `host`, with `inventory`: its containers list, or the digest member instead.
  bhttp::request<bhttp::string_body> make(int host, const std::string& inventory) const {
    std::string target = "/api/metrics/heartbeat";
    if (options_.wait > 0) target += "?wait=" + std::to_string(options_.wait);
    bhttp::request<bhttp::string_body> request(bhttp::verb::post, target, 11);
    request.set(bhttp::field::host, "localhost");
    request.set(bhttp::field::authorization, "Bearer " + options_.token);
    request.set(bhttp::field::content_type, "application/json");
    request.body() = R"({"ip_address":"10.0.0.7","hostname":"load-)" + std::to_string(host) +
                     R"(","service_name":"load","last_command_id":null,"status":"active",)"
                     R"("timestamp":"2026-11-22T10:00:00.123456","received_command_ids":[],)"
                     R"("executed_command_ids":[],"perf_supported_events":["cycles"],)"
                     R"("agent_version":"1.53.1","run_mode":"standalone_executable",)"
                     R"("namespace":null,"pod_name":null,)" +
                     inventory + "}";
    request.prepare_payload();
    return request;
  }

  void send() {
    auto self = shared_from_this();
    sent_ = Clock::now();
    Clock::time_point due = options_.rate > 0 ? due_ : sent_;
    size_t index = next_request_++ % requests_.size();
    const auto& request = by_digest_[index] ? *by_digest_[index] : requests_[index];
    bhttp::async_write(stream_, request, [this, self, due, index](beast::error_code error, size_t) {
      if (error) return broken(error);
      response_ = {};
      bhttp::async_read(stream_, buffer_, response_,
                        [this, self, due, index](beast::error_code error, size_t) {
                          if (error) return broken(error);
                          if (options_.digests) follow_digest(index);
                          answered(due);
                        });
    });
  }

  // The answer's containers_digest, if any, goes in place of the host's list from now on.
  void follow_digest(size_t index) {
    constexpr std::string_view kMember = R"("containers_digest":")";
    const std::string& body = response_.body();
    size_t at = body.find(kMember);
    size_t end = at == std::string::npos ? at : body.find('"', at + kMember.size());
    if (end == std::string::npos) {
      by_digest_[index].reset();
      return;
    }
    std::string member(body, at, end + 1 - at);  // "containers_digest":"…"
    if (!by_digest_[index] || by_digest_[index]->body().find(member) == std::string::npos) {
      by_digest_[index] = make(hosts_[index], member);
    }
  }

  void answered(Clock::time_point due) {
    Clock::time_point now = Clock::now();
    if (response_.result() != bhttp::status::ok) {
      if (totals_.errors++ < 5) {
        std::fprintf(stderr, "status %u: %s\n", response_.result_int(), response_.body().c_str());
      }
    } else if (options_.wait > 0) {
      // A held heartbeat answers after the window it was sent in: count it whenever it comes.
      auto held = std::chrono::duration<double>(now - sent_).count();
      ++(held >= options_.wait - 0.1 ? totals_.held_full : totals_.held_short);
      ++totals_.answered;
      totals_.latencies_ms.push_back(held * 1000);
    } else if (due >= totals_.measure_from && now <= totals_.measure_until) {
      ++totals_.answered;
      totals_.latencies_ms.push_back(std::chrono::duration<double, std::milli>(now - due).count());
    }
    due_ = options_.rate > 0 ? due_ + interval_ : now;
    if (options_.rate > 0) {
      schedule();
    } else if (now < totals_.measure_until) {
      send();
    }
  }

  void broken(beast::error_code error) {
    if (totals_.errors++ < 5) std::fprintf(stderr, "request: %s\n", error.message().c_str());
  }

  beast::ssl_stream<beast::tcp_stream> stream_;
  asio::steady_timer timer_;
  const Options& options_;
  Totals& totals_;
  std::vector<bhttp::request<bhttp::string_body>> requests_;  // one per host name, in turn
  std::vector<int> hosts_;                                    // the host of each
  // --digests: each host's heartbeat with the digest the server answered, once it has.
  std::vector<std::optional<bhttp::request<bhttp::string_body>>> by_digest_;
  size_t next_request_ = 0;
  bhttp::response<bhttp::string_body> response_;
  beast::flat_buffer buffer_;
  Clock::duration interval_{0};
  Clock::duration offset_{0};
  Clock::time_point due_;
  Clock::time_point sent_;
};

double percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  size_t rank = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

// "8443,8444" -> {8443, 8444}
std::vector<unsigned short> parse_ports(const std::string& list) {
  std::vector<unsigned short> ports;
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    ports.push_back(static_cast<unsigned short>(std::stoi(list.substr(start, comma - start))));
    start = comma + 1;
  }
  return ports;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--port")
      options.ports = parse_ports(value);
    else if (flag == "--ca")
      options.ca = value;
    else if (flag == "--token")
      options.token = value;
    else if (flag == "--agents")
      options.agents = std::stoi(value);
    else if (flag == "--hosts")
      options.hosts = std::stoi(value);
    else if (flag == "--rate")
      options.rate = std::stod(value);
    else if (flag == "--seconds")
      options.seconds = std::stod(value);
    else if (flag == "--warmup")
      options.warmup = std::stod(value);
    else if (flag == "--wait")
      options.wait = std::stoi(value);
    else if (flag == "--processes")
      options.processes = std::stoi(value);
    else if (flag == "--digests")
      options.digests = value == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  bool no_port = options.ports.empty() ||
                 std::find(options.ports.begin(), options.ports.end(), 0) != options.ports.end();
  if (no_port || options.ca.empty() || options.token.empty() || options.agents < 1 ||
      options.wait < 0 || (options.wait > 0 && options.rate != 0)) {
    std::fprintf(stderr,
                 "usage: heartbeat_load --port P[,P...] --ca CA.pem --token T --agents N "
                 "[--hosts H] [--rate R] [--seconds S] [--warmup S] [--wait W (with --rate 0)] "
                 "[--processes P] [--digests 0|1]\n");
    std::exit(2);
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);

  asio::io_context io;
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.load_verify_file(options.ca);
  std::vector<asio::ip::tcp::endpoint> endpoints;
  for (unsigned short port : options.ports) {
    endpoints.emplace_back(asio::ip::make_address("127.0.0.1"), port);
  }
  Totals totals;
  std::vector<std::shared_ptr<Agent>> agents;
  for (int i = 0; i < options.agents; ++i) {
    agents.push_back(std::make_shared<Agent>(io, tls, options, totals, i));
  }

  // Connections first, a bounded number of handshakes at a time; the measurement starts when
  // the last is up. Long-polls are already under way by then (see Agent::connect): with --wait
  // this one run() lasts until they are all answered.
  auto connect_start = Clock::now();
  Clock::time_point start;
  double connect_seconds = -1;
  size_t next = 0;
  int in_flight = 0;
  std::function<void()> connect_more = [&] {
    while (in_flight < options.concurrent_handshakes && next < agents.size()) {
      ++in_flight;
      size_t index = next++;
      agents[index]->connect(endpoints[index % endpoints.size()], [&] {
        --in_flight;
        connect_more();
      });
    }
    if (in_flight > 0 || connect_seconds >= 0) return;
    start = Clock::now();
    connect_seconds = std::chrono::duration<double>(start - connect_start).count();
    totals.measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.warmup));
    totals.measure_until =
        totals.measure_from +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.seconds));
  };
  connect_more();
  io.run();
  io.restart();
  if (totals.connected < options.agents) {
    std::fprintf(stderr, "only %d of %d agents connected\n", totals.connected, options.agents);
    return 1;
  }
  if (options.wait == 0) {
    for (auto& agent : agents) agent->run(start);
    io.run();
  }

  double rate = static_cast<double>(totals.answered) / options.seconds;
  std::vector<double>& latencies = totals.latencies_ms;
  double p50 = percentile(latencies, 0.50);
  double p99 = percentile(latencies, 0.99);
  double max = latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
  int hosts = options.hosts > 0 ? options.hosts : options.agents;
  if (options.wait > 0) {
    std::printf(
        "%d agents over keep-alive TLS to %zu port(s), %d hosts (%d connected in %.1f s), "
        "long-polls (?wait=%d): %lu answered after the full wait, %lu sooner; held p50 %.0f ms, "
        "max %.0f ms (from sent); %lu errors\n",
        options.agents, endpoints.size(), hosts, totals.connected, connect_seconds, options.wait,
        static_cast<unsigned long>(totals.held_full), static_cast<unsigned long>(totals.held_short),
        p50, max, static_cast<unsigned long>(totals.errors));
    return totals.errors == 0 ? 0 : 1;
  }
  std::printf(
      "%d agents over keep-alive TLS to %zu port(s), %d hosts (%d connected in %.1f s), %s: "
      "%.0f heartbeats/s over %.0f s; latency p50 %.2f ms, p99 %.2f ms, max %.2f ms; %lu errors\n",
      options.agents, endpoints.size(), hosts, totals.connected, connect_seconds,
      options.rate > 0
          ? ("open loop at " + std::to_string(static_cast<int>(options.rate)) + "/s").c_str()
          : "closed loop",
      rate, options.seconds, p50, p99, max, static_cast<unsigned long>(totals.errors));
  return totals.errors == 0 ? 0 : 1;
}
