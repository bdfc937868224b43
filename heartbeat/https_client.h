// The agent's HTTP(S) client for the control server: asynchronous on the caller's io_context (the
// agent's one I/O thread), one request at a time over a kept-alive connection, a deadline on
// every phase (resolve, connect, handshake, write, read), TLS verified by default with SNI and
// host-name checks, and cancel() for shutdown. Given several servers, it fails over between them
// (heartbeat/server_rotation.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Boost.Asio, whose awaitable.hpp needs std::exchange
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include "common/result.h"
#include "heartbeat/server_url.h"

namespace dormant::heartbeat {

struct ClientTls {
  bool verify = true;       // --no-verify turns it off
  std::string ca_bundle;    // PEM; empty: the system's store
  std::string client_cert;  // PEM; with client_key, for mutual TLS
  std::string client_key;
};
// Both client_cert and client_key, or neither.
Result<std::shared_ptr<boost::asio::ssl::context>> make_client_tls(const ClientTls& tls);

struct PhaseTimeouts {
  std::chrono::milliseconds resolve{10'000};
  std::chrono::milliseconds connect{10'000};
  std::chrono::milliseconds handshake{10'000};
  std::chrono::milliseconds write{30'000};
  std::chrono::milliseconds read{30'000};
  // How long a connection is kept between requests; 0: until the server closes it.
  std::chrono::milliseconds keep_idle{0};
};

// The largest answer body taken, by kind of request (issue 22): the control server answers
// heartbeats and completions with a command at most, an upload with its id.
inline constexpr size_t kMaxReplyBytes = 1 << 20;
inline constexpr size_t kMaxUploadReplyBytes = 64 << 10;

// Header fields as (name, value), in order.
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpReply {
  unsigned status = 0;
  std::string body;
  HttpHeaders headers{};  // the response's

  // The value of the first header called `name`, in any case; nullptr when there is none.
  const std::string* header(std::string_view name) const;
};

class HttpsClient {
 public:
  using Headers = HttpHeaders;
  using Callback = std::function<void(Result<HttpReply>)>;

  // `servers`: one, or several to fail over between, in order: a request goes to the current
  // server; one that fails at connection level (resolve, connect, TLS handshake, a deadline, a
  // reset) or answers 502, 503 or 504 moves the next request to the next server, round the list
  // (server_rotation.h). The request itself is not sent again: its caller's retry is. A host
  // name that resolves to several addresses is tried address by address within one request.
  // `tls` is needed for https:// servers and ignored for http://. `headers` go on every request
  // (Authorization...).
  static Result<std::shared_ptr<HttpsClient>> make(boost::asio::io_context& io,
                                                   std::vector<ServerUrl> servers,
                                                   std::shared_ptr<boost::asio::ssl::context> tls,
                                                   Headers headers, PhaseTimeouts timeouts = {});
  static Result<std::shared_ptr<HttpsClient>> make(boost::asio::io_context& io, ServerUrl server,
                                                   std::shared_ptr<boost::asio::ssl::context> tls,
                                                   Headers headers, PhaseTimeouts timeouts = {}) {
    return make(io, std::vector<ServerUrl>{std::move(server)}, std::move(tls), std::move(headers),
                timeouts);
  }
  virtual ~HttpsClient() = default;

  struct Post {
    std::string path;   // after base_path; may carry a query string
    std::string body;   // JSON unless `headers` say otherwise
    Headers headers{};  // this request's own, beside (or replacing) the client's
    // How long the server may hold the answer on purpose (a long-poll): added to the read
    // deadline.
    std::chrono::milliseconds held_for{0};
    // A longer answer fails the request (kNetwork, "body limit exceeded") as soon as it passes.
    size_t max_reply_bytes = kMaxReplyBytes;
    // The rest of the body, after `body`: parts that many requests share, sent without a copy.
    std::vector<std::shared_ptr<const std::string>> shared_body{};
  };

  // POSTs to base_path + `path`; `done` runs on the io_context with the reply or an error that
  // names the phase that failed (kNetwork, kTls, kTimeout, kCancelled). After a large answer,
  // taken or refused, the heap's free memory goes back to the system once `done` has run. A
  // kept-alive connection that the server has closed meanwhile is replaced once, silently. One
  // request at a time: a second post() before `done` ran fails with kInvalidArgument.
  virtual void post(Post request, Callback done) = 0;
  void post(std::string path, std::string body, Callback done) {
    post(Post{.path = std::move(path), .body = std::move(body)}, std::move(done));
  }

  // Ends the request in flight (its callback gets kCancelled) and closes the connection.
  virtual void cancel() = 0;
  // New TLS settings and headers (a rotated CA bundle or client certificate, a new token): the
  // request in flight ends as it began, then the connection is closed, so that the next request
  // connects with them.
  virtual void reconfigure(std::shared_ptr<boost::asio::ssl::context> tls, Headers headers) = 0;

  // Runs on the io_context each time a connection is closed for having been idle `keep_idle`.
  virtual void on_idle_close(std::function<void()> closed) = 0;
};

}  // namespace dormant::heartbeat
