#include "server/http/http_server.h"

#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/eventually.h"
#include "tests/support/raw_http.h"

#include "common/subprocess.h"
#include "common/unique_fd.h"
#include "server/http/body_budget.h"

namespace dormant::server::http {
namespace {

using testing::closed_by_server;
using testing::connect_from;
using testing::read_head;
using testing::send_text;

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
    ++handled_;
    if (request.target() == "/slow") {
      ++slow_started_;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
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
    options.max_connections_per_address = 0;
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

  // A plain HTTP server with these options, echoing.
  static std::unique_ptr<HttpServer> start_with(HttpServerOptions options) {
    options.threads = 2;
    auto server = HttpServer::start(std::move(options), echo);
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
  static inline std::atomic<int> handled_{0};
  static inline std::atomic<int> slow_started_{0};
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

UniqueFd connect_to(uint16_t port) { return connect_from("127.0.0.1", port); }

// Issue 22, server 7: a request that stops halfway is answered 408, then closed.
TEST_F(HttpServerTest, SlowClientIsCutOffWith408WhileOthersAreServed) {
  auto server = start(false, "", std::chrono::seconds(1));
  UniqueFd slow = connect_to(server->port());
  ASSERT_TRUE(send_text(slow, "POST / HTTP/1.1\r\nHost: x\r\n"));  // and then nothing more
  EXPECT_EQ(curl({"http://127.0.0.1:" + std::to_string(server->port()) + "/other"}), "200");
  EXPECT_TRUE(read_head(slow).starts_with("HTTP/1.1 408 ")) << "a request out of time gets 408";
  EXPECT_TRUE(closed_by_server(slow));
}

// One request on `socket`, with `headers`; the status line of the answer, or "" when the server
// closed it.
std::string exchange(const UniqueFd& socket, std::string_view headers = "") {
  std::string request = "GET /again HTTP/1.1\r\nHost: x\r\n" + std::string(headers) + "\r\n";
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

// A server whose admission takes "Authorization: let-me-in" as the only credential.
Admission admit_let_me_in(const RequestHeader& header, const Client&) {
  Admission admission;
  admission.authenticated = header[bhttp::field::authorization] == "let-me-in";
  admission.max_body_bytes = header.target() == "/small" ? 10 : 8 << 20;
  return admission;
}

// Issue 22, server 5: bodies were read before the token was checked (200 x 4 MiB cost 848 MB).
// Now 50 clients without the token are answered 401 without sending a byte of their 4 MiB; a
// client that asks to continue hears 100 only once admitted; a route takes only its own limit.
TEST_F(HttpServerTest, HeadersAreJudgedBeforeAnyOfTheBodyIsRead) {
  HttpServerOptions options;
  options.max_body_bytes = 8 << 20;
  options.admit = [](const RequestHeader& header, const Client& client) {
    Admission admission = admit_let_me_in(header, client);
    if (!admission.authenticated)
      admission.refusal = json_response(bhttp::status::unauthorized, "{}");
    return admission;
  };
  auto server = start_with(options);
  handled_ = 0;
  std::vector<UniqueFd> intruders;
  for (int i = 0; i < 50; ++i) {
    intruders.push_back(connect_to(server->port()));
    ASSERT_TRUE(send_text(intruders.back(),
                          "POST /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                          "Content-Length: 4194304\r\n\r\n"));
  }
  for (auto& intruder : intruders) {
    std::string head = read_head(intruder);
    EXPECT_TRUE(head.starts_with("HTTP/1.1 401 ")) << head;
    EXPECT_NE(head.find("Connection: close"), std::string::npos) << head;
  }
  EXPECT_EQ(handled_, 0);
  EXPECT_EQ(server->inflight_body_bytes(), 0u);

  UniqueFd admitted = connect_to(server->port());
  ASSERT_TRUE(send_text(admitted,
                        "POST /upload HTTP/1.1\r\nHost: x\r\nAuthorization: let-me-in\r\n"
                        "Expect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  EXPECT_TRUE(read_head(admitted).starts_with("HTTP/1.1 100 Continue\r\n"));
  ASSERT_TRUE(send_text(admitted, "hello"));
  EXPECT_TRUE(read_head(admitted).starts_with("HTTP/1.1 200 "));

  UniqueFd too_big = connect_to(server->port());
  ASSERT_TRUE(send_text(too_big,
                        "POST /small HTTP/1.1\r\nHost: x\r\nAuthorization: let-me-in\r\n"
                        "Content-Length: 100\r\n\r\n"));
  EXPECT_TRUE(read_head(too_big).starts_with("HTTP/1.1 413 ")) << "/small takes 10 bytes";
}

// What the admitting code found of a request reaches its handler with it, each request its own:
// the API routes a request once, on its headers.
TEST_F(HttpServerTest, TheAdmissionsNoteReachesTheHandlerWithItsRequest) {
  HttpServerOptions options;
  options.admit = [](const RequestHeader& header, const Client&) {
    Admission admission;
    admission.max_body_bytes = 100;
    admission.authenticated = true;
    admission.note = std::string(header.target());
    return admission;
  };
  auto server = HttpServer::start(options, [](Request request, const Client&,
                                              std::shared_ptr<Responder> responder, std::any note) {
    const auto* admitted = std::any_cast<std::string>(&note);
    bool same = admitted != nullptr && *admitted == std::string(request.target());
    responder->reply(json_response(same ? bhttp::status::ok : bhttp::status::conflict, "{}"));
  });
  ASSERT_TRUE(server.ok()) << server.error().message();
  UniqueFd kept = connect_to((*server)->port());
  ASSERT_TRUE(send_text(kept,
                        "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
                        "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(read_head(kept).starts_with("HTTP/1.1 200 "));
  EXPECT_NE(read_head(kept).find("HTTP/1.1 200 "), std::string::npos);
}

// Waits (up to 10 s) until `done` holds.
template <typename Predicate>
bool wait_until(Predicate done) {
  for (int i = 0; i < 1000 && !done(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

// Issue 22, server 2: the bodies being received share one budget; past it, 503 before reading.
TEST_F(HttpServerTest, BodiesInFlightShareOneBudget) {
  HttpServerOptions options;
  options.max_body_bytes = 1000;
  options.max_inflight_body_bytes = 1500;
  auto server = start_with(options);
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n";
  UniqueFd first = connect_to(server->port());
  ASSERT_TRUE(send_text(first, head + std::string(10, 'x')));
  ASSERT_TRUE(wait_until([&] { return server->inflight_body_bytes() == 1000; }));

  UniqueFd second = connect_to(server->port());
  ASSERT_TRUE(send_text(second, head));
  std::string refused = read_head(second);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503 ")) << refused;
  EXPECT_NE(refused.find("Retry-After: 5"), std::string::npos) << refused;

  ASSERT_TRUE(send_text(first, std::string(990, 'x')));
  EXPECT_TRUE(read_head(first).starts_with("HTTP/1.1 200 "));
  EXPECT_TRUE(wait_until([&] { return server->inflight_body_bytes() == 0; }));
  UniqueFd third = connect_to(server->port());
  ASSERT_TRUE(send_text(third, head + std::string(1000, 'x')));
  EXPECT_TRUE(read_head(third).starts_with("HTTP/1.1 200 ")) << "the budget came back";
}

// Issue 22, server 7: instead of one deadline for a whole body, a minimum rate. A body that
// arrives slower is answered 408; one that takes longer than the read timeout at a good rate is
// served.
TEST_F(HttpServerTest, ABodySlowerThanTheMinimumRateGets408) {
  HttpServerOptions options;
  options.max_body_bytes = 100000;
  options.read_timeout = std::chrono::seconds(1);
  options.min_body_bytes_per_second = 1000;
  auto server = start_with(options);
  const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n";
  // Sends the body in pieces of `piece` bytes, `pause` apart, until it is sent or refused.
  auto send_body = [](const UniqueFd& socket, size_t piece, std::chrono::milliseconds pause) {
    for (size_t sent = 0; sent < 20000; sent += piece) {
      if (!send_text(socket, std::string(piece, 'x'))) return;
      std::this_thread::sleep_for(pause);
    }
  };
  UniqueFd slow = connect_to(server->port());
  ASSERT_TRUE(send_text(slow, head));
  std::thread trickle(send_body, std::cref(slow), 50, std::chrono::milliseconds(250));  // 200 B/s
  std::string answer = read_head(slow);
  ::shutdown(slow.get(), SHUT_RDWR);
  trickle.join();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 408 ")) << answer;

  UniqueFd steady = connect_to(server->port());
  ASSERT_TRUE(send_text(steady, head));
  auto started = std::chrono::steady_clock::now();
  std::thread stream(send_body, std::cref(steady), 2000, std::chrono::milliseconds(150));
  answer = read_head(steady);
  stream.join();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200 ")) << answer;
  EXPECT_GT(std::chrono::steady_clock::now() - started, options.read_timeout)
      << "the body took longer than the read timeout, at a good rate";
}

// Issue 22, server 5: one address cannot take every connection.
TEST_F(HttpServerTest, OneAddressGetsItsShareOfConnectionsAndNoMore) {
  HttpServerOptions options;
  options.max_connections_per_address = 3;
  auto server = start_with(options);
  std::vector<UniqueFd> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(connect_from("127.0.0.1", server->port()));
    EXPECT_EQ(exchange(held.back()), "HTTP/1.1 200 OK");
  }
  UniqueFd surplus = connect_from("127.0.0.1", server->port());
  EXPECT_TRUE(closed_by_server(surplus)) << "a fourth from the same address is closed";
  UniqueFd other = connect_from("127.0.0.2", server->port());
  EXPECT_EQ(exchange(other), "HTTP/1.1 200 OK") << "another address is served";
  held.pop_back();
  EXPECT_TRUE(wait_until([&] { return server->open_connections() == 3; }));
  UniqueFd again = connect_from("127.0.0.1", server->port());
  EXPECT_EQ(exchange(again), "HTTP/1.1 200 OK") << "the address's share came back";
}

// Issue 22, server 5: eight idle keep-alive sockets locked a ninth client out at
// --max-connections 8. At the cap the connection idle the longest is closed instead.
TEST_F(HttpServerTest, AtTheConnectionCapTheLongestIdleMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 8;
  options.max_connections_per_address = 0;
  auto server = start_with(options);
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(connect_to(server->port()));
    EXPECT_EQ(exchange(idle.back()), "HTTP/1.1 200 OK");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  UniqueFd ninth = connect_to(server->port());
  EXPECT_EQ(exchange(ninth), "HTTP/1.1 200 OK") << "the ninth client is served";
  EXPECT_TRUE(closed_by_server(idle.front())) << "the longest idle made room";
  EXPECT_EQ(exchange(idle[1]), "HTTP/1.1 200 OK") << "the others stay";
}

// Issue 40: with a request held (a long-poll) on every connection, nothing was idle to close at the
// cap and new clients waited in the backlog. Now the request held the longest is answered, its
// connection closed after its reply, and the newcomer served; with nothing held, the connection
// that has sent only part of its headers the longest makes room.
TEST_F(HttpServerTest, AtTheConnectionCapAHeldRequestOrAHalfSentHeaderMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 4;
  options.max_connections_per_address = 0;
  options.threads = 2;
  std::atomic<int> held{0};
  auto server = HttpServer::start(options, [&held](const Request& request, const Client&,
                                                   std::shared_ptr<Responder> responder, std::any) {
    if (request.target() != "/hold") {
      return responder->reply(json_response(bhttp::status::ok, R"({"held":false})"));
    }
    responder->on_reclaim([responder] {
      responder->reply(json_response(bhttp::status::ok, R"({"released":true})"));
    });
    ++held;
  });
  ASSERT_TRUE(server.ok()) << server.error().message();
  const uint16_t port = (*server)->port();
  std::vector<UniqueFd> holders;
  for (int i = 0; i < 4; ++i) {
    holders.push_back(connect_to(port));
    ASSERT_TRUE(send_text(holders.back(), "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(wait_until([&] { return held == i + 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Served long before the header deadline (10 s) could have freed a connection.
  UniqueFd newcomer = connect_from("127.0.0.1", port, std::chrono::seconds(5));
  EXPECT_EQ(exchange(newcomer), "HTTP/1.1 200 OK") << "the newcomer is served";
  std::string released = read_head(holders.front());
  EXPECT_TRUE(released.starts_with("HTTP/1.1 200 ")) << released;
  EXPECT_NE(released.find("Connection: close"), std::string::npos) << released;
  EXPECT_TRUE(closed_by_server(holders.front())) << "the oldest held request made room";

  (*server)->stop(std::chrono::milliseconds(0));
  server = HttpServer::start(
      options, [](const Request&, const Client&, std::shared_ptr<Responder> responder, std::any) {
        responder->reply(json_response(bhttp::status::ok, "{}"));
      });
  ASSERT_TRUE(server.ok()) << server.error().message();
  std::vector<UniqueFd> half_sent;
  for (int i = 0; i < 4; ++i) {
    half_sent.push_back(connect_to((*server)->port()));
    ASSERT_TRUE(send_text(half_sent.back(), "GET / HTTP/1.1\r\nHost: x\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  UniqueFd second = connect_from("127.0.0.1", (*server)->port(), std::chrono::seconds(5));
  EXPECT_EQ(exchange(second), "HTTP/1.1 200 OK") << "a newcomer is served among half-sent headers";
  EXPECT_TRUE(closed_by_server(half_sent.front())) << "the oldest half-sent header made room";
}

// Issue 40: work for a client that had left went on to its end (a merge for 0.2 h). While its
// request is served the connection is watched: the handler sees Client::gone once the client
// closes it. Kept-alive and pipelined requests are served as before.
TEST_F(HttpServerTest, AClientThatLeavesWhileItsRequestIsServedIsSeenGone) {
  HttpServerOptions options;
  options.threads = 2;
  std::promise<bool> saw_gone;
  std::atomic<bool> told{false};
  auto server = HttpServer::start(options, [&](Request request, const Client& client,
                                               std::shared_ptr<Responder> responder, std::any) {
    if (request.target() != "/long") {
      return responder->reply(json_response(bhttp::status::ok, "{}"));
    }
    std::thread([&, client, responder] {
      bool gone = wait_until([&] { return client.has_gone(); });
      if (!told.exchange(true)) saw_gone.set_value(gone);
      responder->reply(json_response(bhttp::status::ok, "{}"));
    }).detach();
  });
  ASSERT_TRUE(server.ok()) << server.error().message();
  {
    UniqueFd leaving = connect_to((*server)->port());
    ASSERT_TRUE(send_text(leaving, "GET /long HTTP/1.1\r\nHost: x\r\n\r\n"));
  }  // closed before the answer
  auto gone = saw_gone.get_future();
  ASSERT_EQ(gone.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(gone.get()) << "the handler saw its client gone";

  UniqueFd kept = connect_to((*server)->port());
  EXPECT_EQ(exchange(kept), "HTTP/1.1 200 OK");
  EXPECT_EQ(exchange(kept), "HTTP/1.1 200 OK") << "the watch's read serves the next request";
  ASSERT_TRUE(
      send_text(kept, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_TRUE(read_head(kept).starts_with("HTTP/1.1 200 "));
  EXPECT_NE(read_head(kept).find("HTTP/1.1 200 "), std::string::npos) << "pipelined: both answered";
}

// Issue 40: 64 connections from one address, each announcing 4 MiB and trickling it, took the
// whole budget and every other client's request got 503. Now an address holds a sixteenth of it,
// a credential as much wherever it comes from, and a quarter is kept for reserved requests.
TEST(BodyBudget, AnAddressOrACredentialHoldsItsShareAndUploadsLeaveTheReserve) {
  constexpr size_t kMiB = 1 << 20;
  BodyBudget budget(256 * kMiB, 4 * kMiB);
  EXPECT_EQ(budget.share(), 16 * kMiB);
  EXPECT_EQ(budget.reserve(), 64 * kMiB);
  auto upload = [](std::string address, std::string credential) {
    return BodyBudget::Claim{4 * kMiB, std::move(address), std::move(credential), false};
  };
  int admitted = 0;
  for (int i = 0; i < 64; ++i) admitted += budget.take(upload("10.0.0.1", "agents")) ? 1 : 0;
  EXPECT_EQ(admitted, 4) << "one address: 16 MiB";
  EXPECT_FALSE(budget.take(upload("10.0.0.2", "agents"))) << "the same token from elsewhere";
  EXPECT_TRUE(budget.take(upload("10.0.0.2", "other"))) << "another token from elsewhere";
  // Uploads from many addresses and tokens fill what is not reserved, and no more.
  int others = 0;
  for (int i = 0; i < 64; ++i) {
    std::string name = "host-" + std::to_string(i);
    others += budget.take(upload(name, name)) ? 1 : 0;
  }
  EXPECT_EQ(4 + 1 + others, 48) << "192 MiB of uploads";
  BodyBudget::Claim heartbeat{1 * kMiB, "10.0.0.9", "agents", true};
  for (int i = 0; i < 16; ++i) {
    heartbeat.address = "beat-" + std::to_string(i);
    EXPECT_TRUE(budget.take(heartbeat)) << "a heartbeat takes the reserve, token or not";
  }
  EXPECT_FALSE(budget.take(upload("10.0.0.3", "third")));
  budget.give_back(upload("10.0.0.1", "agents"));
  EXPECT_TRUE(budget.take(upload("10.0.0.3", "third"))) << "what is given back is taken again";
  EXPECT_EQ(budget.in_use(), 192 * kMiB + 16 * kMiB);
}

// Issue 22, server 5: until a request on it authenticates, a connection waits a short time for
// the next; an agent's connection keeps the long idle timeout between its heartbeats.
TEST_F(HttpServerTest, AConnectionThatHasNotAuthenticatedWaitsOnlyBriefly) {
  HttpServerOptions options;
  options.idle_timeout = std::chrono::seconds(30);
  options.unauthenticated_idle_timeout = std::chrono::seconds(1);
  options.admit = admit_let_me_in;
  auto server = start_with(options);
  UniqueFd silent = connect_to(server->port());
  UniqueFd anonymous = connect_to(server->port());
  EXPECT_EQ(exchange(anonymous), "HTTP/1.1 200 OK");
  UniqueFd agent = connect_to(server->port());
  EXPECT_EQ(exchange(agent, "Authorization: let-me-in\r\n"), "HTTP/1.1 200 OK");
  EXPECT_TRUE(closed_by_server(silent)) << "a connection that never sends is closed";
  EXPECT_TRUE(closed_by_server(anonymous)) << "so is one that never authenticated";
  EXPECT_EQ(exchange(agent), "HTTP/1.1 200 OK") << "the authenticated one waits longer";
}

// A held request whose client has left, answered at stop() from another thread (as the store's
// threads answer held heartbeats): its connection ends during the drain. The server's threads
// had run out of work once the client left, and the answer waited for the drain's end (every
// dormant-server took 15 s to stop once its agent had gone).
TEST_F(HttpServerTest, AHeldRequestAnsweredFromAnotherThreadAtStopEndsDuringTheDrain) {
  std::mutex mutex;
  std::condition_variable reclaimed;
  std::shared_ptr<Responder> to_answer;
  std::shared_ptr<const std::atomic<bool>> gone;
  HttpServerOptions options;
  options.threads = 2;
  auto server = HttpServer::start(options, [&](const Request&, const Client& client,
                                               std::shared_ptr<Responder> responder, std::any) {
    responder->on_reclaim([&, responder] {
      std::lock_guard lock(mutex);
      to_answer = responder;
      reclaimed.notify_one();
    });
    std::lock_guard lock(mutex);
    gone = client.gone;
  });
  ASSERT_TRUE(server.ok()) << server.error().message();
  std::thread store([&] {
    std::unique_lock lock(mutex);
    if (!reclaimed.wait_for(lock, std::chrono::seconds(60), [&] { return to_answer != nullptr; })) {
      return;
    }
    auto responder = std::move(to_answer);
    lock.unlock();
    responder->reply(json_response(bhttp::status::ok, "{}"));
  });
  {
    UniqueFd client = connect_to((*server)->port());
    ASSERT_TRUE(send_text(client, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_TRUE(wait_until([&] {
      std::lock_guard lock(mutex);
      return gone != nullptr;
    }));
  }  // the client leaves
  ASSERT_TRUE(wait_until([&] { return gone->load(); }));
  std::thread stopper([&] { (*server)->stop(std::chrono::seconds(60)); });
  EXPECT_TRUE(testing::eventually([&] { return (*server)->open_connections() == 0; },
                                  std::chrono::seconds(20), std::chrono::milliseconds(1)))
      << "the answer waited for the drain's end";
  stopper.join();
  store.join();
}

TEST_F(HttpServerTest, StopLetsARequestInFlightFinish) {
  auto server = start(false);
  std::string status;
  const int slow_before = slow_started_;
  std::thread client(
      [&] { status = curl({"http://127.0.0.1:" + std::to_string(server->port()) + "/slow"}); });
  // However long curl takes to start and connect on a loaded machine: stop once it is in flight.
  EXPECT_TRUE(testing::eventually([&] { return slow_started_ > slow_before; },
                                  std::chrono::seconds(30), std::chrono::milliseconds(1)));
  server->stop(std::chrono::seconds(5));
  client.join();
  EXPECT_EQ(status, "200");
  EXPECT_EQ(server->open_connections(), 0u);
}

// Issue 22, server 5: out of file descriptors, an accept fails again at once while the client
// waits in the backlog; accepting in a loop took a core. The server now waits between tries.
TEST_F(HttpServerTest, OutOfDescriptorsTheServerWaitsBetweenAcceptsInsteadOfSpinning) {
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
