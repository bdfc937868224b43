#include "server/http/http_server.h"

#include <filesystem>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/subprocess.h"
#include "common/unique_fd.h"

namespace dormant::server::http {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;

class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = fs::temp_directory_path() / ("dormant-certs-" + std::to_string(::getpid()));
    auto made = run_command({GEN_CERTS, certs_.string()}, deadline_after(std::chrono::seconds(60)));
    ASSERT_TRUE(made.ok() && made->status.success()) << "gen-certs failed";
  }
  static void TearDownTestSuite() { fs::remove_all(certs_); }

  std::string cert(const char* name) { return (certs_ / name).string(); }

  // Echoes the method, path and body size; sleeps when the path says so.
  static Response echo(const Request& request, const std::string&) {
    if (request.target() == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return json_response(bhttp::status::ok,
                         R"({"method":")" + std::string(request.method_string()) + R"(","path":")" +
                             std::string(request.target()) + R"(","body":)" +
                             std::to_string(request.body().size()) + "}");
  }

  std::unique_ptr<HttpServer> start(bool tls, const std::string& client_ca = "",
                                    std::chrono::seconds read_timeout = std::chrono::seconds(10),
                                    std::chrono::seconds idle_timeout = std::chrono::seconds(120),
                                    TlsVersion min_version = TlsVersion::k1_2) {
    HttpServerOptions options;
    options.max_body_bytes = 1000;
    options.max_header_bytes = 2000;
    options.read_timeout = read_timeout;
    options.idle_timeout = idle_timeout;
    options.threads = 2;
    if (tls) {
      auto context =
          make_tls_context(cert("server.pem"), cert("server.key"), client_ca, min_version);
      EXPECT_TRUE(context.ok()) << context.error().message();
      options.tls = *context;
    }
    auto server = HttpServer::start(options, echo);
    EXPECT_TRUE(server.ok()) << server.error().message();
    return std::move(*server);
  }

  // curl's HTTP status, or its exit code as "curl:N" when it could not get one.
  static std::string curl(std::vector<std::string> args) {
    std::vector<std::string> argv = {"curl", "-s",           "-o",         "/dev/null",
                                     "-w",   "%{http_code}", "--max-time", "10"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto output = run_command(argv, deadline_after(std::chrono::seconds(30)));
    if (!output.ok()) return "error";
    if (!output->status.success()) return "curl:" + std::to_string(output->status.code);
    std::string code = output->stdout_text;
    while (!code.empty() && code.back() == '\n') code.pop_back();
    return code;
  }

  std::string https(uint16_t port, const std::string& path) {
    return "https://localhost:" + std::to_string(port) + path;
  }

  static fs::path certs_;
};

fs::path HttpServerTest::certs_;

TEST_F(HttpServerTest, ServesOverVerifiedTls) {
  auto server = start(true);
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), https(server->port(), "/api/v1/health_check")}),
            "200");
}

// Issue 22, server 8: TLS 1.2 only with forward secrecy and authenticated encryption.
TEST_F(HttpServerTest, Tls12OffersOnlyEcdheWithAeadAndOneThreeCanBeRequired) {
  auto server = start(true);
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--cacert", cert("ca.pem"), "--tls-max", "1.2"});
    args.push_back(https(server->port(), "/"));
    return curl(args);
  };
  for (const char* weak : {"AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA",
                           "ECDHE-ECDSA-AES128-SHA", "DHE-RSA-AES128-GCM-SHA256"}) {
    EXPECT_EQ(with({"--ciphers", weak}), "curl:35") << weak << " was accepted";
  }
  EXPECT_EQ(with({"--ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"}),
            "200");
  EXPECT_EQ(with({}), "200");

  auto only_13 =
      start(true, "", std::chrono::seconds(10), std::chrono::seconds(120), TlsVersion::k1_3);
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), "--tls-max", "1.2", https(only_13->port(), "/")}),
            "curl:35");
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), https(only_13->port(), "/")}), "200");
}

TEST_F(HttpServerTest, ClientThatDoesNotTrustTheCaIsRefused) {
  auto server = start(true);
  EXPECT_EQ(curl({https(server->port(), "/")}), "curl:60");  // peer certificate not trusted
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"),
                  "https://127.0.0.2:" + std::to_string(server->port()) + "/"}),
            "curl:7")
      << "the server listens on 127.0.0.1 only";
}

TEST_F(HttpServerTest, PlainHttpWhenConfigured) {
  auto server = start(false);
  EXPECT_EQ(curl({"http://127.0.0.1:" + std::to_string(server->port()) + "/x"}), "200");
}

TEST_F(HttpServerTest, ClientCertificateRequiredWhenAClientCaIsSet) {
  auto server = start(true, cert("ca.pem"));
  EXPECT_NE(curl({"--cacert", cert("ca.pem"), https(server->port(), "/")}), "200");
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), "--cert", cert("client.pem"), "--key",
                  cert("client.key"), https(server->port(), "/")}),
            "200");
}

TEST_F(HttpServerTest, OversizedBodyAndHeadersAreRefusedWithTheirStatus) {
  auto server = start(true);
  std::string big(5000, 'x');
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), "--data-binary", big, https(server->port(), "/")}),
            "413");
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), "-H", "X-Big: " + std::string(3000, 'y'),
                  https(server->port(), "/")}),
            "431");
  EXPECT_EQ(curl({"--cacert", cert("ca.pem"), https(server->port(), "/after")}), "200");
}

TEST_F(HttpServerTest, GarbageIsABadRequest) {
  auto server = start(false);
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  std::string garbage = "NOT HTTP AT ALL\r\n\r\n";
  ASSERT_EQ(::write(socket.get(), garbage.data(), garbage.size()),
            static_cast<ssize_t>(garbage.size()));
  char reply[512] = {};
  ASSERT_GT(::read(socket.get(), reply, sizeof(reply) - 1), 0);
  EXPECT_EQ(std::string(reply).rfind("HTTP/1.1 400", 0), 0u) << reply;
}

TEST_F(HttpServerTest, SlowClientIsCutOffWhileOthersAreServed) {
  auto server = start(false, "", std::chrono::seconds(1));
  UniqueFd slow(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(server->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(slow.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  std::string partial = "POST / HTTP/1.1\r\nHost: x\r\n";  // and then nothing more
  ASSERT_GT(::write(slow.get(), partial.data(), partial.size()), 0);
  EXPECT_EQ(curl({"http://127.0.0.1:" + std::to_string(server->port()) + "/other"}), "200");
  char byte;
  EXPECT_EQ(::read(slow.get(), &byte, 1), 0) << "the server closes the slow connection";
}

// A socket connected to the plain HTTP server on `port`; reads on it give up after 6 s.
UniqueFd connect_to(uint16_t port) {
  UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(socket.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  timeval limit{6, 0};  // a read that waits longer fails, instead of passing late
  ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  return socket;
}

// One request on `socket`; the status line of the answer, or "" when the server closed it.
std::string exchange(const UniqueFd& socket) {
  std::string request = "GET /again HTTP/1.1\r\nHost: x\r\n\r\n";
  if (::write(socket.get(), request.data(), request.size()) <= 0) return "";
  char reply[512] = {};
  if (::read(socket.get(), reply, sizeof(reply) - 1) <= 0) return "";
  std::string text(reply);
  return text.substr(0, text.find('\r'));
}

// Agents heartbeat every 30 s over one connection: between two requests the idle timeout
// applies, not the read timeout.
TEST_F(HttpServerTest, KeptAliveConnectionOutlivesTheReadTimeoutButNotTheIdleTimeout) {
  auto server = start(false, "", std::chrono::seconds(1), std::chrono::seconds(3));
  UniqueFd socket = connect_to(server->port());
  EXPECT_EQ(exchange(socket), "HTTP/1.1 200 OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(1800));  // past the read timeout
  EXPECT_EQ(exchange(socket), "HTTP/1.1 200 OK") << "closed after the read timeout";
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));  // past the idle timeout
  char byte;
  EXPECT_EQ(::read(socket.get(), &byte, 1), 0) << "the idle connection is closed";
}

TEST_F(HttpServerTest, NewConnectionGetsOnlyTheReadTimeoutForItsFirstRequest) {
  auto server = start(false, "", std::chrono::seconds(1), std::chrono::seconds(30));
  UniqueFd socket = connect_to(server->port());
  char byte;
  EXPECT_EQ(::read(socket.get(), &byte, 1), 0) << "a silent new connection is closed";
}

TEST_F(HttpServerTest, StopLetsARequestInFlightFinish) {
  auto server = start(false);
  std::string status;
  std::thread client(
      [&] { status = curl({"http://127.0.0.1:" + std::to_string(server->port()) + "/slow"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server->stop(std::chrono::seconds(5));
  client.join();
  EXPECT_EQ(status, "200");
  EXPECT_EQ(server->open_connections(), 0u);
}

// Issue 22, server 5: out of file descriptors, an accept fails again at once while the client
// waits in the backlog; accepting in a loop took a core. The server now waits between tries.
TEST_F(HttpServerTest, OutOfDescriptorsTheServerWaitsBetweenAcceptsInsteadOfSpinning) {
#ifdef __SANITIZE_ADDRESS__
  // UBSan checks each virtual call by probing the vtable through a pipe(2): with no descriptor
  // left it takes every new type for a bad one and aborts the test.
  GTEST_SKIP() << "the sanitizers need the file descriptors this test exhausts";
#endif
  auto server = start(false);
  const uint16_t port = server->port();
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& fd : fs::directory_iterator("/proc/self/fd")) ++open_now;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit low = saved;
  low.rlim_cur = open_now + 16;  // the child's pipes fit; the server's accepts soon do not
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  SpawnOptions options;
  options.argv = {"python3", "-c",
                  "import resource, socket, sys, time\n"
                  "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
                  "resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))\n"
                  "held = [socket.create_connection(('127.0.0.1', int(sys.argv[1]))) "
                  "for _ in range(64)]\n"
                  "print('connected', flush=True)\n"
                  "time.sleep(5)\n",
                  std::to_string(port)};
  auto clients = Subprocess::spawn(options);
  ASSERT_TRUE(clients.ok()) << clients.error().message();
  auto connected = (*clients)->next_stdout_line(deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(connected.ok() && *connected) << "the clients did not connect";
  auto cpu_seconds = [] {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  };
  const double cpu_before = cpu_seconds();
  const auto wall_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double cpu = cpu_seconds() - cpu_before;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  (*clients)->terminate(std::chrono::seconds(1));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_LT(cpu / wall, 0.25) << "the server spent " << cpu << " s of CPU in " << wall
                              << " s with accepts failing";
  EXPECT_EQ(curl({"http://127.0.0.1:" + std::to_string(port) + "/x"}), "200")
      << "it serves again once descriptors are free";
}

}  // namespace
}  // namespace dormant::server::http
