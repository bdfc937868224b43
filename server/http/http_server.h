// HttpServer: HTTP/1.1 (keep-alive) over TLS or plain TCP on Boost.Beast. Every request runs
// through one Handler; the server enforces the limits a public endpoint needs: header and body
// size, a deadline for each request to arrive, a cap on connections, and a drain on stop.
#pragma once

#include <any>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http.hpp>

#include "common/result.h"

namespace dormant::server::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using RequestHeader = boost::beast::http::request_header<>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

// Called on a server thread for each complete request; `remote` is "ip:port".
using Handler = std::function<Response(const Request& request, const std::string& remote)>;

// How an asynchronous handler answers: at once or later (a long-poll), from any thread. Only the
// first reply counts. The connection reads nothing and has no deadline while it waits: whoever
// holds the Responder must reply, in the end.
class Responder {
 public:
  virtual ~Responder() = default;
  virtual void reply(Response response) = 0;
  // The connection's strand: timers and later work for this request run there.
  virtual boost::asio::any_io_executor executor() const = 0;
  // A request held for later says how to answer it at once. At the connection cap, with no
  // connection idle, the server calls it for the request held the longest and closes that
  // connection after its reply, to make room for a new one.
  virtual void on_reclaim(std::function<void()> answer_now) = 0;
};
// Who sent a request: "ip:port", and with mutual TLS the DNS names of its certificate (its
// subjectAltName entries, or its CN where it has none).
struct Client {
  std::string remote;
  std::vector<std::string> certificate_names;
  std::string address;  // the remote's IP address alone
  // Set once the client has closed its connection (or the server has): work still being done
  // for it may stop. Null for a request made by the server's own code.
  std::shared_ptr<const std::atomic<bool>> gone;

  bool has_gone() const { return gone != nullptr && gone->load(); }
};
// The request is the handler's. Its body counts in the in-flight budget until the reply, or
// until the handler holds it for later (Responder::on_reclaim). `note`: the Admission's.
using AsyncHandler = std::function<void(Request request, const Client& client,
                                        std::shared_ptr<Responder> responder, std::any note)>;

// What becomes of a request once its headers are read, before any of its body is.
struct Admission {
  // Answered at once: its body is not read. A request refused with a body on the way, or for
  // its credentials (401, 403), closes its connection.
  std::optional<Response> refusal;
  size_t max_body_bytes = 0;
  // Whether the request proved who sent it: a connection that has not waits a short time only.
  bool authenticated = false;
  // Heartbeats and completions: their bodies may use the part of the in-flight budget that
  // uploads cannot take (BodyBudget).
  bool reserved = false;
  // Who the credential is (not the secret itself): the bodies it sends share one part of the
  // budget, from whatever address. Empty: none.
  std::string credential;
  // What the admitting code found of the request (the API: its route), handed to the handler
  // with the whole request, so that it is not found again.
  std::any note;
};
using Admit = std::function<Admission(const RequestHeader& header, const Client& client)>;

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 0;                               // 0: any free port
  std::shared_ptr<boost::asio::ssl::context> tls;  // null: plain HTTP
  // Null: every request is admitted with max_body_bytes, as authenticated.
  Admit admit;
  size_t max_body_bytes = 4 << 20;
  size_t max_header_bytes = 16 << 10;
  // Request bodies being received, all connections together: past it, or past the part of it one
  // address or credential may hold (body_budget.h), a request is refused with 503 before its
  // body is read.
  size_t max_inflight_body_bytes = 256 << 20;
  // To send a request's headers, from their first byte; and for its body, this plus one second
  // for each min_body_bytes_per_second received (a slower body gets 408).
  std::chrono::seconds read_timeout{10};
  size_t min_body_bytes_per_second = 16 << 10;
  std::chrono::seconds idle_timeout{120};  // a kept-alive connection between requests
  // Until one of its requests is authenticated, a connection waits this long for the next.
  std::chrono::seconds unauthenticated_idle_timeout{5};
  // At the cap a new connection makes room: the connection idle the longest is closed, or else the
  // request held the longest (a long-poll) is answered and its connection closed, or else the
  // connection that has been sending its headers the longest is closed. With none of these,
  // accepts wait. A new connection is never the one closed.
  size_t max_connections = 16384;
  size_t max_connections_per_address = 64;  // 0: no cap
  int threads = 1;
};

enum class TlsVersion { k1_2, k1_3 };

// A TLS server context from PEM files; with `client_ca`, clients must present a certificate
// signed by it. TLS 1.2 is offered with ECDHE key exchange and AEAD ciphers only (TLS 1.3's
// suites are all of that kind); `min_version` 1.3 refuses 1.2.
Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(
    const std::string& cert, const std::string& key, const std::string& client_ca,
    TlsVersion min_version = TlsVersion::k1_2);

// A JSON response with the given status.
Response json_response(boost::beast::http::status status, const std::string& body);

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, Handler handler);
  static Result<std::unique_ptr<HttpServer>> start(HttpServerOptions options, AsyncHandler handler);
  ~HttpServer();

  uint16_t port() const;
  size_t open_connections() const;
  size_t inflight_body_bytes() const;
  // Stops accepting; requests in flight finish (up to `drain`), then every connection closes.
  void stop(std::chrono::milliseconds drain);

  struct State;

 private:
  explicit HttpServer(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace dormant::server::http
