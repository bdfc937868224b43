// The agent's HTTPS client against the project's own HttpServer on loopback, with a test CA:
// verification, keep-alive, deadlines, cancellation, failover between several servers.
#include "heartbeat/https_client.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/loopback_socket.h"

#include "common/subprocess.h"
#include "server/http/http_server.h"

namespace dormant::heartbeat {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

TEST(ParseServerUrl, TheFormsAFlagTakes) {
  auto plain = parse_server_url("http://studio:8000");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->host, "studio");
  EXPECT_EQ(plain->port, "8000");
  EXPECT_EQ(plain->base_path, "");
  auto tls = parse_server_url("https://profiler.example.com/studio/");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->port, "443");
  EXPECT_EQ(tls->base_path, "/studio") << "a trailing '/' is dropped, as gProfiler does";
  auto v6 = parse_server_url("https://[::1]:8443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "8443");
}

TEST(ParseServerUrl, RefusesWhatIsNotAServer) {
  for (const char* url : {"", "studio:8000", "ftp://studio", "https://", "https://:443",
                          "https://studio:0", "https://studio:99999", "https://studio:80x",
                          "https://user@studio", "https://studio/?q=1", "https://[::1"}) {
    EXPECT_FALSE(parse_server_url(url).ok()) << url;
  }
}

class HttpsClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = fs::temp_directory_path() / ("dormant-client-certs-" + std::to_string(::getpid()));
    auto made = run_command({GEN_CERTS, certs_.string()}, deadline_after(60s));
    ASSERT_TRUE(made.ok() && made->status.success()) << "gen-certs failed";
    other_certs_ = certs_ / "other";
    made = run_command({GEN_CERTS, other_certs_.string()}, deadline_after(60s));
    ASSERT_TRUE(made.ok() && made->status.success()) << "gen-certs failed";
  }
  static void TearDownTestSuite() { fs::remove_all(certs_); }

  // Answers with the request's Authorization and Host headers and the client's address, so that
  // a test can see them and whether the connection was reused.
  static server::http::Response echo(const server::http::Request& request,
                                     const std::string& remote) {
    auto header = [&](bhttp::field field) {
      auto found = request.find(field);
      return found == request.end() ? std::string() : std::string(found->value());
    };
    nlohmann::json answer = {{"auth", header(bhttp::field::authorization)},
                             {"host", header(bhttp::field::host)},
                             {"remote", remote},
                             {"path", std::string(request.target())},
                             {"body", request.body()}};
    return server::http::json_response(bhttp::status::ok, answer.dump());
  }

  void start_server(bool tls, std::string address = "127.0.0.1",
                    std::chrono::seconds idle_timeout = 120s, std::string client_ca = "") {
    server::http::HttpServerOptions options;
    options.address = std::move(address);
    options.idle_timeout = idle_timeout;
    if (tls) {
      auto context = server::http::make_tls_context((certs_ / "server.pem").string(),
                                                    (certs_ / "server.key").string(), client_ca);
      ASSERT_TRUE(context.ok());
      options.tls = *context;
    }
    auto started = server::http::HttpServer::start(options, echo);
    ASSERT_TRUE(started.ok()) << started.error().message();
    server_ = std::move(*started);
  }

  std::shared_ptr<HttpsClient> client(const std::string& url, ClientTls tls = {},
                                      PhaseTimeouts timeouts = {}) {
    return client(std::vector<std::string>{url}, tls, timeouts);
  }
  std::shared_ptr<HttpsClient> client(const std::vector<std::string>& urls, ClientTls tls = {},
                                      PhaseTimeouts timeouts = {}) {
    if (tls.verify && tls.ca_bundle.empty()) tls.ca_bundle = (certs_ / "ca.pem").string();
    auto context = make_client_tls(tls);
    EXPECT_TRUE(context.ok()) << context.error().message();
    std::vector<ServerUrl> servers;
    for (const std::string& url : urls) {
      auto server_url = parse_server_url(url);
      EXPECT_TRUE(server_url.ok()) << url;
      servers.push_back(*server_url);
    }
    auto made =
        HttpsClient::make(io_, servers, *context, {{"Authorization", "Bearer secret"}}, timeouts);
    EXPECT_TRUE(made.ok());
    return *made;
  }

  // One of several servers of a failover test: answers `status` with its name, and counts the
  // requests it got.
  struct NamedServer {
    std::unique_ptr<server::http::HttpServer> http;
    std::shared_ptr<std::atomic<int>> requests = std::make_shared<std::atomic<int>>(0);
    std::string url() const { return "https://localhost:" + std::to_string(http->port()); }
  };
  NamedServer named_server(const std::string& name, bhttp::status status = bhttp::status::ok,
                           std::string address = "127.0.0.1", bool tls = true) {
    NamedServer named;
    server::http::HttpServerOptions options;
    options.address = std::move(address);
    if (tls) {
      auto context = server::http::make_tls_context((certs_ / "server.pem").string(),
                                                    (certs_ / "server.key").string(), "");
      EXPECT_TRUE(context.ok());
      options.tls = *context;
    }
    auto started = server::http::HttpServer::start(
        options, [name, status, requests = named.requests](const server::http::Request&,
                                                           const std::string&) {
          ++*requests;
          return server::http::json_response(status, nlohmann::json{{"server", name}}.dump());
        });
    EXPECT_TRUE(started.ok()) << started.error().message();
    if (started.ok()) named.http = std::move(*started);
    return named;
  }

  // Posts and runs the io_context until the answer (or 30 s).
  Result<HttpReply> post(HttpsClient& client, const std::string& path = "/api/metrics/heartbeat") {
    std::optional<Result<HttpReply>> outcome;
    client.post(path, "{}", [&](Result<HttpReply> reply) { outcome = std::move(reply); });
    io_.restart();
    io_.run_for(30s);
    if (!outcome) return Error(ErrorKind::kTimeout, "no answer in 30 s");
    return std::move(*outcome);
  }

  std::string https_url() const { return "https://localhost:" + std::to_string(server_->port()); }

  static nlohmann::json json_of(const Result<HttpReply>& reply) {
    return nlohmann::json::parse(reply.ok() ? reply->body : "{}");
  }

  static fs::path certs_;
  static fs::path other_certs_;
  boost::asio::io_context io_;
  std::unique_ptr<server::http::HttpServer> server_;
};

fs::path HttpsClientTest::certs_;
fs::path HttpsClientTest::other_certs_;

TEST_F(HttpsClientTest, PostsOverVerifiedTlsWithTheTokenAndKeepsTheConnection) {
  start_server(true);
  auto https = client(https_url() + "/prefix");
  auto first = post(*https);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->status, 200u);
  EXPECT_EQ(json_of(first)["auth"], "Bearer secret");
  EXPECT_EQ(json_of(first)["path"], "/prefix/api/metrics/heartbeat");
  EXPECT_EQ(json_of(first)["host"], "localhost:" + std::to_string(server_->port()));
  auto second = post(*https);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ(json_of(second)["remote"], json_of(first)["remote"]) << "a new connection was made";
  EXPECT_EQ(server_->open_connections(), 1u);
}

// Shared parts follow the body as one, with its length: a large one, an empty one, a missing one.
TEST_F(HttpsClientTest, SharedPartsFollowTheBody) {
  start_server(true);
  auto https = client(https_url());
  auto large = std::make_shared<const std::string>(100'000, 'x');
  auto empty = std::make_shared<const std::string>();
  for (int round = 0; round < 2; ++round) {
    std::optional<Result<HttpReply>> outcome;
    https->post(
        {.path = "/echo",
         .body = "{\"a\":\"",
         .shared_body = {large, empty, nullptr, std::make_shared<const std::string>("\"}")}},
        [&](Result<HttpReply> reply) { outcome = std::move(reply); });
    io_.restart();
    io_.run_for(30s);
    ASSERT_TRUE(outcome && outcome->ok());
    EXPECT_EQ(json_of(*outcome)["body"], "{\"a\":\"" + *large + "\"}");
  }
  EXPECT_EQ(large.use_count(), 1) << "the client keeps a part past its request";
}

TEST_F(HttpsClientTest, AConnectionTheServerClosedIsReplacedOnce) {
  start_server(true, "127.0.0.1", 1s);
  auto https = client(https_url());
  auto first = post(*https);
  ASSERT_TRUE(first.ok()) << first.error().message();
  std::this_thread::sleep_for(2s);  // the server closes the idle connection
  auto second = post(*https);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_NE(json_of(second)["remote"], json_of(first)["remote"]);
}

TEST_F(HttpsClientTest, PlainHttpWorks) {
  start_server(false);
  auto plain = client("http://127.0.0.1:" + std::to_string(server_->port()));
  auto reply = post(*plain);
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ(reply->status, 200u);
}

TEST_F(HttpsClientTest, AServerSignedByAnotherCaIsRefused) {
  start_server(true);
  ClientTls tls;
  tls.ca_bundle = (other_certs_ / "ca.pem").string();
  auto reply = post(*client(https_url(), tls));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kTls) << reply.error().message();
  EXPECT_NE(reply.error().message().find("TLS handshake with localhost"), std::string::npos)
      << reply.error().message();
  EXPECT_NE(reply.error().message().find("give the CA that signed it with --tls-ca-bundle"),
            std::string::npos)
      << reply.error().message();
}

TEST_F(HttpsClientTest, ACertificateForAnotherNameIsRefused) {
  start_server(true, "127.0.0.2");  // the certificate names localhost, 127.0.0.1 and ::1
  auto reply = post(*client("https://127.0.0.2:" + std::to_string(server_->port())));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kTls) << reply.error().message();
  EXPECT_NE(reply.error().message().find("does not name the host in the URL"), std::string::npos)
      << reply.error().message();
}

// The URL's scheme and the server's disagree: the error says which scheme to use.
TEST_F(HttpsClientTest, HttpToATlsServerSaysToUseHttps) {
  start_server(true);
  auto reply = post(*client("http://localhost:" + std::to_string(server_->port())));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().message().find("the URL must start with https://"), std::string::npos)
      << reply.error().message();
}

TEST_F(HttpsClientTest, HttpsToAPlainServerSaysToUseHttp) {
  start_server(false);
  auto reply = post(*client(https_url()));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kTls) << reply.error().message();
  EXPECT_NE(reply.error().message().find("the URL starts with http://"), std::string::npos)
      << reply.error().message();
}

TEST_F(HttpsClientTest, NoVerifyAcceptsAnyCertificate) {
  start_server(true, "127.0.0.2");
  ClientTls tls;
  tls.verify = false;
  auto reply = post(*client("https://127.0.0.2:" + std::to_string(server_->port()), tls));
  ASSERT_TRUE(reply.ok()) << reply.error().message();
}

TEST_F(HttpsClientTest, NoVerifyStillSendsTheClientCertificate) {
  start_server(true, "127.0.0.2", 120s, (certs_ / "ca.pem").string());
  std::string url = "https://127.0.0.2:" + std::to_string(server_->port());
  ClientTls anonymous;
  anonymous.verify = false;
  EXPECT_FALSE(post(*client(url, anonymous)).ok()) << "the server asks for a client certificate";
  ClientTls mutual = anonymous;
  mutual.client_cert = (certs_ / "client.pem").string();
  mutual.client_key = (certs_ / "client.key").string();
  auto reply = post(*client(url, mutual));
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ(reply->status, 200u);
}

TEST_F(HttpsClientTest, CancelBetweenRequestsClosesTheKeptConnection) {
  start_server(true);
  auto https = client(https_url());
  auto first = post(*https);
  ASSERT_TRUE(first.ok()) << first.error().message();
  https->cancel();
  auto second = post(*https);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_NE(json_of(second)["remote"], json_of(first)["remote"]) << "the connection was kept";
}

TEST_F(HttpsClientTest, AConnectionIdleForKeepIdleIsClosedAndSaysSo) {
  start_server(true);
  PhaseTimeouts timeouts;
  timeouts.keep_idle = 200ms;
  auto https = client(https_url(), {}, timeouts);
  int closed = 0;
  https->on_idle_close([&] { ++closed; });
  auto first = post(*https);  // returns once the io_context is idle: after the 200 ms
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(closed, 1);
  for (int wait = 0; wait < 100 && server_->open_connections() > 0; ++wait) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(server_->open_connections(), 0u);
  auto second = post(*https);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_NE(json_of(second)["remote"], json_of(first)["remote"]) << "the connection was kept";
  EXPECT_EQ(closed, 2);
}

TEST_F(HttpsClientTest, RequestsWithinKeepIdleShareTheConnection) {
  start_server(true);
  PhaseTimeouts timeouts;
  timeouts.keep_idle = 30s;
  auto https = client(https_url(), {}, timeouts);
  int closed = 0;
  https->on_idle_close([&] { ++closed; });
  std::vector<std::string> remotes;
  for (int round = 0; round < 3; ++round) {
    std::optional<Result<HttpReply>> reply;
    https->post("/api/metrics/heartbeat", "{}", [&](Result<HttpReply> r) { reply = std::move(r); });
    io_.restart();
    while (!reply) io_.run_one_for(30s);
    ASSERT_TRUE(reply->ok()) << reply->error().message();
    remotes.push_back(json_of(*reply)["remote"]);
  }
  EXPECT_EQ(remotes[0], remotes[1]);
  EXPECT_EQ(remotes[1], remotes[2]);
  EXPECT_EQ(closed, 0);
  https->cancel();  // closes the connection and stops the idle timer
  io_.restart();
  io_.run_for(1s);
  EXPECT_EQ(closed, 0);
}

TEST_F(HttpsClientTest, NobodyListeningIsANetworkError) {
  start_server(false);
  uint16_t port = server_->port();
  server_->stop(0ms);
  server_.reset();
  auto reply = post(*client("http://127.0.0.1:" + std::to_string(port)));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kNetwork) << reply.error().message();
  EXPECT_NE(reply.error().message().find("connecting to 127.0.0.1"), std::string::npos)
      << reply.error().message();
}

TEST_F(HttpsClientTest, AServerThatNeverAnswersTimesOutInTheRightPhase) {
  dormant::testing::LoopbackSocket silent(dormant::testing::LoopbackSocket::Mode::kListening);
  PhaseTimeouts timeouts;
  timeouts.handshake = 500ms;
  timeouts.read = 500ms;
  auto reply = post(*client("https://localhost:" + std::to_string(silent.port()), {}, timeouts));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kTimeout) << reply.error().message();
  EXPECT_NE(reply.error().message().find("TLS handshake"), std::string::npos)
      << reply.error().message();
  auto plain = post(*client("http://127.0.0.1:" + std::to_string(silent.port()), {}, timeouts));
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().kind(), ErrorKind::kTimeout) << plain.error().message();
  EXPECT_NE(plain.error().message().find("reading the answer"), std::string::npos)
      << plain.error().message();
}

TEST_F(HttpsClientTest, CancelEndsTheRequestInFlight) {
  dormant::testing::LoopbackSocket silent(dormant::testing::LoopbackSocket::Mode::kListening);
  auto plain = client("http://127.0.0.1:" + std::to_string(silent.port()));
  std::optional<Result<HttpReply>> outcome;
  plain->post("/x", "{}", [&](Result<HttpReply> reply) { outcome = std::move(reply); });
  boost::asio::steady_timer timer(io_, 200ms);
  timer.async_wait([&](boost::system::error_code) { plain->cancel(); });
  io_.run_for(10s);
  ASSERT_TRUE(outcome.has_value()) << "the callback did not run";
  ASSERT_FALSE(outcome->ok());
  EXPECT_EQ(outcome->error().kind(), ErrorKind::kCancelled) << outcome->error().message();
}

TEST_F(HttpsClientTest, OneRequestAtATime) {
  dormant::testing::LoopbackSocket silent(dormant::testing::LoopbackSocket::Mode::kListening);
  auto plain = client("http://127.0.0.1:" + std::to_string(silent.port()));
  std::optional<Result<HttpReply>> second;
  plain->post("/x", "{}", [](Result<HttpReply>) {});
  plain->post("/y", "{}", [&](Result<HttpReply> reply) { second = std::move(reply); });
  io_.run_for(200ms);
  plain->cancel();
  io_.run_for(1s);
  ASSERT_TRUE(second.has_value());
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(second->error().kind(), ErrorKind::kInvalidArgument);
}

TEST_F(HttpsClientTest, TheReplyCarriesItsHeadersWhateverTheirCase) {
  start_server(true);
  auto reply = post(*client(https_url()));
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  ASSERT_FALSE(reply->headers.empty());
  const std::string* type = reply->header("CONTENT-type");
  ASSERT_NE(type, nullptr);
  EXPECT_EQ(*type, "application/json");
  EXPECT_EQ(reply->header("X-Not-Sent"), nullptr);
}

// A server that answers 503 (a replica that is going away, a proxy without a backend) is left
// for the next one; the reply still goes to the caller, whose retry reaches the next server.
TEST_F(HttpsClientTest, AfterA503TheNextRequestGoesToTheNextServerAndStaysThere) {
  NamedServer a = named_server("a", bhttp::status::service_unavailable);
  NamedServer b = named_server("b");
  ASSERT_TRUE(a.http && b.http);
  auto failover = client(std::vector<std::string>{a.url(), b.url()});
  auto first = post(*failover);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->status, 503u);
  for (int request = 0; request < 3; ++request) {
    auto next = post(*failover);
    ASSERT_TRUE(next.ok()) << next.error().message();
    EXPECT_EQ(next->status, 200u);
    EXPECT_EQ(json_of(next)["server"], "b") << "request " << request;
  }
  EXPECT_EQ(a.requests->load(), 1) << "the client went back to the server that answered 503";
  EXPECT_EQ(b.requests->load(), 3);
}

TEST_F(HttpsClientTest, AfterARefusedConnectionTheNextRequestGoesToTheNextServerAndStaysThere) {
  dormant::testing::LoopbackSocket away(dormant::testing::LoopbackSocket::Mode::kRefusing);
  NamedServer b = named_server("b");
  ASSERT_TRUE(b.http);
  auto failover =
      client(std::vector<std::string>{"https://localhost:" + std::to_string(away.port()), b.url()});
  auto first = post(*failover);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().kind(), ErrorKind::kNetwork) << first.error().message();
  for (int request = 0; request < 3; ++request) {
    auto next = post(*failover);
    ASSERT_TRUE(next.ok()) << next.error().message();
    EXPECT_EQ(json_of(next)["server"], "b") << "request " << request;
  }
  EXPECT_EQ(b.requests->load(), 3);
}

TEST_F(HttpsClientTest, WhenTheOtherServerFailsTooTheClientGoesRoundTheList) {
  NamedServer a = named_server("a");
  NamedServer b = named_server("b", bhttp::status::bad_gateway);
  ASSERT_TRUE(a.http && b.http);
  dormant::testing::LoopbackSocket away(dormant::testing::LoopbackSocket::Mode::kRefusing);
  auto failover = client(std::vector<std::string>{
      "https://localhost:" + std::to_string(away.port()), b.url(), a.url()});
  EXPECT_FALSE(post(*failover).ok());
  EXPECT_EQ(post(*failover)->status, 502u);
  EXPECT_EQ(json_of(post(*failover))["server"], "a");
  EXPECT_EQ(json_of(post(*failover))["server"], "a");
  EXPECT_EQ(b.requests->load(), 1);
}

// A name that resolves to several addresses is tried address by address within one request: the
// test gives a name two loopback addresses (in a private mount namespace, over /etc/hosts) and
// a server listens on one of them only; both ways round, one request reaches it.
TEST_F(HttpsClientTest, EveryAddressOfANameIsTriedWithinOneRequest) {
  if (::geteuid() != 0) GTEST_SKIP() << "a private /etc/hosts needs root";
  if (::unshare(CLONE_NEWNS) != 0) GTEST_SKIP() << "unshare(CLONE_NEWNS): " << std::strerror(errno);
  ASSERT_EQ(::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  fs::path hosts = certs_ / "hosts";
  {
    std::ifstream system_hosts("/etc/hosts");
    std::ofstream out(hosts);
    out << system_hosts.rdbuf() << "\n127.0.0.1 two-addresses.test\n127.0.0.2 two-addresses.test\n";
  }
  if (::mount(hosts.c_str(), "/etc/hosts", nullptr, MS_BIND, nullptr) != 0) {
    GTEST_SKIP() << "cannot bind-mount over /etc/hosts: " << std::strerror(errno);
  }
  boost::asio::ip::tcp::resolver resolver(io_);
  auto found = resolver.resolve("two-addresses.test", "80");
  ASSERT_EQ(found.size(), 2u) << "the name has both addresses";
  std::string first_address = found.begin()->endpoint().address().to_string();

  bool first_was_refused = false;
  for (const char* address : {"127.0.0.1", "127.0.0.2"}) {
    NamedServer only = named_server(address, bhttp::status::ok, address, /*tls=*/false);
    ASSERT_TRUE(only.http);
    first_was_refused = first_was_refused || first_address != address;
    auto reply = post(*client("http://two-addresses.test:" + std::to_string(only.http->port())));
    ASSERT_TRUE(reply.ok()) << "listening on " << address << ": " << reply.error().message();
    EXPECT_EQ(json_of(reply)["server"], address);
  }
  EXPECT_TRUE(first_was_refused) << "one of the two requests found the first address refused";
}

TEST(MakeClientTls, HalfAClientCertificateIsAnError) {
  ClientTls tls;
  tls.client_cert = "/nonexistent.pem";
  auto context = make_client_tls(tls);
  ASSERT_FALSE(context.ok());
}

}  // namespace
}  // namespace dormant::heartbeat
