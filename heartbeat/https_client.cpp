#include "heartbeat/https_client.h"

#include <optional>

#include <malloc.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "heartbeat/connection_hint.h"
#include "heartbeat/server_rotation.h"
#include "heartbeat/shared_parts_body.h"

namespace dormant::heartbeat {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// An answer at least this large is followed by malloc_trim: what parsing it took goes back.
constexpr size_t kTrimAfterBytes = 64 << 10;

bool is_ip_literal(const std::string& host) {
  boost::system::error_code error;
  asio::ip::make_address(host, error);
  return !error;
}

class Client final : public HttpsClient, public std::enable_shared_from_this<Client> {
 public:
  Client(asio::io_context& io, std::vector<ServerUrl> servers,
         std::shared_ptr<asio::ssl::context> tls, Headers headers, PhaseTimeouts timeouts)
      : io_(io),
        servers_(std::move(servers)),
        tls_(std::move(tls)),
        headers_(std::move(headers)),
        timeouts_(timeouts),
        resolver_(io),
        resolve_timer_(io),
        idle_timer_(io) {}

  using HttpsClient::post;
  void post(Post call, Callback done) override {
    if (callback_) {
      asio::post(io_, [done = std::move(done)] {
        done(Error::invalid_argument("a request to the server is already in flight"));
      });
      return;
    }
    callback_ = std::move(done);
    cancelled_ = false;
    stop_idle_timer();
    request_ = {bhttp::verb::post, server().base_path + call.path, 11};
    request_.set(bhttp::field::host, host_header());
    request_.set(bhttp::field::content_type, "application/json");
    request_.set(bhttp::field::user_agent, "dormant-agent");
    for (const auto& [name, value] : headers_) request_.set(name, value);
    for (const auto& [name, value] : call.headers) request_.set(name, value);
    request_.keep_alive(true);
    request_.body() = {std::move(call.body), std::move(call.shared_body)};
    request_.prepare_payload();
    held_for_ = call.held_for;
    max_reply_bytes_ = call.max_reply_bytes;
    if (connected_) {
      reused_ = true;
      write();
    } else {
      reused_ = false;
      resolve();
    }
  }

  void on_idle_close(std::function<void()> closed) override { idle_closed_ = std::move(closed); }

  void reconfigure(std::shared_ptr<asio::ssl::context> tls, Headers headers) override {
    tls_ = std::move(tls);
    headers_ = std::move(headers);
    if (callback_) {
      reconnect_ = true;
    } else {
      drop_connection();
    }
  }

  void cancel() override {
    if (!callback_) return drop_connection();  // between requests: close the kept connection
    cancelled_ = true;
    if (resolving_) {
      // A lookup already running cannot be interrupted: its answer will be ignored.
      resolving_ = false;
      ++lookup_;
      resolver_.cancel();
      resolve_timer_.cancel();
      Callback done = std::move(callback_);
      callback_ = nullptr;
      asio::post(io_, [done = std::move(done)] {
        done(Error(ErrorKind::kCancelled, "resolving cancelled"));
      });
      return;
    }
    // The operation in flight ends with an error, and its handler reports kCancelled.
    if (tcp_ || ssl_) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
    }
  }

 private:
  // The server of this request: it changes only between requests.
  const ServerUrl& server() const { return servers_.current(); }

  std::string where() const { return server().host + ":" + server().port; }

  // "host", "host:8443", "[::1]:8443": the port only when it is not the scheme's own.
  std::string host_header() const {
    const ServerUrl& server = this->server();
    std::string host =
        server.host.find(':') != std::string::npos ? "[" + server.host + "]" : server.host;
    bool default_port = server.port == (server.tls ? "443" : "80");
    return default_port ? host : host + ":" + server.port;
  }

  beast::tcp_stream& lowest() { return ssl_ ? beast::get_lowest_layer(*ssl_) : *tcp_; }

  template <typename Operation>
  void with_stream(Operation&& operation) {
    if (ssl_) {
      operation(*ssl_);
    } else {
      operation(*tcp_);
    }
  }

  // The error for a failed phase: cancelled, timed out, or what the system said.
  Error phase_error(std::string_view phase, beast::error_code error, ErrorKind kind) {
    if (cancelled_) return Error(ErrorKind::kCancelled, std::string(phase) + " cancelled");
    if (error == beast::error::timeout || error == asio::error::operation_aborted) {
      return Error(ErrorKind::kTimeout, std::string(phase) + " " + where() + ": timed out");
    }
    long verified = ssl_ ? SSL_get_verify_result(ssl_->native_handle()) : X509_V_OK;
    return Error(kind, std::string(phase) + " " + where() + ": " + error.message() +
                           connection_hint(server().tls, error, verified));
  }

  // The resolver cannot interrupt a lookup that has started (getaddrinfo runs on asio's helper
  // thread), so the deadline ends the request itself and a late answer is ignored: each lookup
  // has a number, and only the current one's answer counts.
  void resolve() {
    auto self = shared_from_this();
    uint64_t lookup = ++lookup_;
    resolving_ = true;
    resolve_timer_.expires_after(timeouts_.resolve);
    resolve_timer_.async_wait([this, self, lookup](beast::error_code error) {
      if (error || lookup != lookup_ || !resolving_) return;
      resolving_ = false;
      resolver_.cancel();
      fail(Error(ErrorKind::kTimeout, "resolving " + where() + ": timed out"));
    });
    resolver_.async_resolve(
        server().host, server().port,
        [this, self, lookup](beast::error_code error, tcp::resolver::results_type found) {
          if (lookup != lookup_ || !resolving_) return;  // timed out or cancelled meanwhile
          resolving_ = false;
          resolve_timer_.cancel();
          if (error) return fail(phase_error("resolving", error, ErrorKind::kNetwork));
          connect(found);
        });
  }

  // Every address the name resolved to, in turn, until one takes the connection (asio's range
  // connect): a refused or unreachable first address moves on to the next within this request.
  // The deadline covers them all.
  void connect(const tcp::resolver::results_type& found) {
    if (server().tls) {
      if (!tls_) return fail(Error::invalid_argument(to_string(server()) + " needs a TLS context"));
      ssl_.emplace(io_, *tls_);
      if (!is_ip_literal(server().host)) {
        SSL_set_tlsext_host_name(ssl_->native_handle(), server().host.c_str());  // SNI
      }
      // asio's check leaves OpenSSL's result unspecified: it is named, for the error's hint.
      ssl_->set_verify_callback([check = asio::ssl::host_name_verification(server().host)](
                                    bool preverified, asio::ssl::verify_context& context) mutable {
        bool verified = check(preverified, context);
        if (preverified && !verified) {
          X509_STORE_CTX_set_error(context.native_handle(), X509_V_ERR_HOSTNAME_MISMATCH);
        }
        return verified;
      });
    } else {
      tcp_.emplace(io_);
    }
    auto self = shared_from_this();
    lowest().expires_after(timeouts_.connect);
    lowest().async_connect(found, [this, self](beast::error_code error, const tcp::endpoint&) {
      if (error) return fail(phase_error("connecting to", error, ErrorKind::kNetwork));
      // A request goes out in more than one write (headers, body parts, TLS records): under
      // Nagle's algorithm the last would wait for the server's delayed ACK.
      beast::error_code no_delay_refused;  // the connection works as well without
      lowest().socket().set_option(tcp::no_delay(true), no_delay_refused);
      if (!ssl_) {
        connected_ = true;
        return write();
      }
      lowest().expires_after(timeouts_.handshake);
      ssl_->async_handshake(asio::ssl::stream_base::client, [this, self](beast::error_code error) {
        if (error) return fail(phase_error("TLS handshake with", error, ErrorKind::kTls));
        connected_ = true;
        write();
      });
    });
  }

  void write() {
    parser_.reset();
    auto self = shared_from_this();
    lowest().expires_after(timeouts_.write);
    with_stream([&](auto& stream) {
      bhttp::async_write(stream, request_, [this, self](beast::error_code error, size_t) {
        if (error)
          return retry_or_fail(error, phase_error("sending to", error, ErrorKind::kNetwork));
        read();
      });
    });
  }

  void read() {
    parser_.emplace();
    parser_->body_limit(max_reply_bytes_);
    lowest().expires_after(timeouts_.read + held_for_);
    read_some();
  }

  // Piece by piece, so that an answer past max_reply_bytes_ is refused as soon as its header says
  // so, or its body passes it, whatever the parser's own limit does.
  void read_some() {
    auto self = shared_from_this();
    with_stream([&](auto& stream) {
      bhttp::async_read_some(
          stream, buffer_, *parser_, [this, self](beast::error_code error, size_t) {
            if (!error && too_large()) error = bhttp::error::body_limit;
            if (error)
              return retry_or_fail(
                  error, phase_error("reading the answer of", error, ErrorKind::kNetwork));
            if (cancelled_) return fail(Error(ErrorKind::kCancelled, "request cancelled"));
            if (!parser_->is_done()) return read_some();
            bhttp::response<bhttp::string_body> response = parser_->release();
            if (!response.keep_alive()) drop_connection();
            HttpReply reply{response.result_int(), std::move(response.body())};
            for (const auto& field : response) {
              reply.headers.emplace_back(std::string(field.name_string()),
                                         std::string(field.value()));
            }
            finish(std::move(reply));
          });
    });
  }

  bool too_large() const {
    if (!parser_->is_header_done()) return false;
    auto length = parser_->content_length();
    return (length && *length > max_reply_bytes_) ||
           parser_->get().body().size() > max_reply_bytes_;
  }

  // A kept-alive connection may have been closed by the server since the last request: then
  // the request goes once more on a new connection, but only when the connection was found
  // closed before any byte of an answer came, so that nothing the server acted on is sent twice.
  void retry_or_fail(beast::error_code cause, Error error) {
    bool closed = cause == bhttp::error::end_of_stream || cause == asio::error::eof ||
                  cause == asio::error::connection_reset || cause == asio::error::broken_pipe ||
                  cause == asio::ssl::error::stream_truncated;
    bool answered = parser_ && parser_->got_some();
    bool retry = reused_ && !cancelled_ && closed && !answered;
    drop_connection();
    if (!retry) return fail(std::move(error));
    reused_ = false;
    resolve();
  }

  void fail(Error error) {
    drop_connection();
    finish(std::move(error));
  }

  void drop_connection() {
    stop_idle_timer();
    if (tcp_ || ssl_) {
      beast::error_code ignored;
      lowest().socket().close(ignored);
    }
    ssl_.reset();
    tcp_.reset();
    buffer_.clear();
    connected_ = false;
  }

  void finish(Result<HttpReply> result) {
    bool large = result ? result->body.size() >= kTrimAfterBytes
                        : parser_ && parser_->get().body().size() >= kTrimAfterBytes;
    request_ = {};  // an upload's body (up to 4 MiB) is not kept until the next request
    parser_.reset();
    if (std::exchange(reconnect_, false)) drop_connection();
    // Moving on: a connection kept to the server that answered 503 is not the next one's.
    if (servers_.after(result)) drop_connection();
    Callback done = std::move(callback_);
    callback_ = nullptr;
    if (connected_) start_idle_timer();
    done(std::move(result));
    if (large) ::malloc_trim(0);
  }

  // A handler that was already due when the timer was stopped sees a newer round and does nothing.
  void start_idle_timer() {
    if (timeouts_.keep_idle.count() <= 0) return;
    uint64_t round = ++idle_round_;
    idle_timer_.expires_after(timeouts_.keep_idle);
    // Weak: a client its owner has let go of is not kept alive by its own idle timer.
    idle_timer_.async_wait([this, weak = weak_from_this(), round](beast::error_code error) {
      auto self = weak.lock();
      if (error || !self || round != idle_round_ || callback_ || !connected_) return;
      drop_connection();
      if (idle_closed_) idle_closed_();
    });
  }

  void stop_idle_timer() {
    ++idle_round_;
    idle_timer_.cancel();
  }

  asio::io_context& io_;
  ServerRotation servers_;
  std::shared_ptr<asio::ssl::context> tls_;
  Headers headers_;
  PhaseTimeouts timeouts_;
  tcp::resolver resolver_;
  asio::steady_timer resolve_timer_;
  asio::steady_timer idle_timer_;
  uint64_t idle_round_ = 0;
  std::function<void()> idle_closed_;
  std::optional<beast::tcp_stream> tcp_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> ssl_;
  bool connected_ = false;
  bool reused_ = false;
  bool cancelled_ = false;
  bool resolving_ = false;
  bool reconnect_ = false;  // reconfigured during a request: closed once it ends
  uint64_t lookup_ = 0;     // the number of the current lookup
  bhttp::request<SharedPartsBody> request_;
  std::chrono::milliseconds held_for_{0};
  size_t max_reply_bytes_ = kMaxReplyBytes;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser_;
  beast::flat_buffer buffer_;
  Callback callback_;
};

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> make_client_tls(const ClientTls& tls) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  beast::error_code error;
  context->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                           asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1,
                       error);
  // A connection kept open between requests gives its read and write buffers back meanwhile.
  SSL_CTX_set_mode(context->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  if (tls.verify) {
    context->set_verify_mode(asio::ssl::verify_peer);
    if (tls.ca_bundle.empty()) {
      context->set_default_verify_paths(error);
    } else {
      context->load_verify_file(tls.ca_bundle, error);
    }
    if (error) {
      return Error(ErrorKind::kTls, "cannot load the CA certificates" +
                                        (tls.ca_bundle.empty() ? "" : " " + tls.ca_bundle) + ": " +
                                        error.message());
    }
  } else {
    context->set_verify_mode(asio::ssl::verify_none);  // client certificates still go out
  }
  if (tls.client_cert.empty() != tls.client_key.empty()) {
    return Error::invalid_argument("mutual TLS needs both --tls-client-cert and --tls-client-key");
  }
  if (!tls.client_cert.empty()) {
    if (context->use_certificate_chain_file(tls.client_cert, error); error) {
      return Error(ErrorKind::kTls, "cannot load the client certificate " + tls.client_cert + ": " +
                                        error.message());
    }
    if (context->use_private_key_file(tls.client_key, asio::ssl::context::pem, error); error) {
      return Error(ErrorKind::kTls,
                   "cannot load the client key " + tls.client_key + ": " + error.message());
    }
  }
  return context;
}

const std::string* HttpReply::header(std::string_view name) const {
  for (const auto& [field, value] : headers) {
    if (beast::iequals(field, beast::string_view(name.data(), name.size()))) return &value;
  }
  return nullptr;
}

Result<std::shared_ptr<HttpsClient>> HttpsClient::make(asio::io_context& io,
                                                       std::vector<ServerUrl> servers,
                                                       std::shared_ptr<asio::ssl::context> tls,
                                                       Headers headers, PhaseTimeouts timeouts) {
  if (servers.empty()) return Error::invalid_argument("no server to send requests to");
  bool any_tls = false;
  for (const ServerUrl& server : servers) {
    if (server.tls && !tls) {
      return Error::invalid_argument("https://" + server.host + " needs a TLS context");
    }
    any_tls = any_tls || server.tls;
  }
  if (!any_tls) tls.reset();
  return std::shared_ptr<HttpsClient>(std::make_shared<Client>(
      io, std::move(servers), std::move(tls), std::move(headers), timeouts));
}

}  // namespace dormant::heartbeat
