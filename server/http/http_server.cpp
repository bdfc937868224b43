#include "server/http/http_server.h"

#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>

#include "server/http/body_budget.h"

namespace dormant::server::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

constexpr std::chrono::seconds kWriteTimeout{30};
constexpr std::chrono::seconds kShutdownTimeout{5};
constexpr std::chrono::seconds kDiscardTimeout{5};  // for the rest of a request refused unread
constexpr size_t kDiscardRead = 16 * 1024;
constexpr size_t kFirstRead = 4096;  // what an idle connection reads when its next request starts
constexpr int kBusyRetryAfterS = 5;  // for a request refused while the body budget is spent

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void close_if_idle() = 0;
  virtual void close_now() = 0;
  // Answers the request held for later at once (Responder::on_reclaim); false with none.
  virtual bool answer_now() = 0;

  // When the connection began to wait for its next request (steady clock, ns); 0 while a
  // request is being read or answered.
  std::atomic<int64_t> idle_since{0};
  // When the request being read began, until its headers are all in; 0 otherwise.
  std::atomic<int64_t> header_since{0};
  // When the handler began to hold its request for a later answer; 0 when none is held.
  std::atomic<int64_t> held_since{0};
  std::atomic<bool> evicted{false};
};

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  HttpServerOptions options;
  AsyncHandler handler;
  net::io_context ioc;
  // Keeps the threads running until stop() lets them end: a held request whose client has left
  // leaves nothing on the connection to wait for, and its answer comes from another thread (the
  // store's) through a post that no thread would otherwise run.
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  std::atomic<bool> stopping{false};

  std::mutex mutex;  // guards the fields below
  size_t connections = 0;
  bool accept_paused = false;
  uint64_t next_session_id = 0;
  struct OpenSession {
    std::weak_ptr<SessionBase> session;
    std::string address;
  };
  std::unordered_map<uint64_t, OpenSession> sessions;
  std::unordered_map<std::string, size_t> connections_by_address;
  uint64_t refused_by_address = 0;  // since the last one logged
  std::chrono::steady_clock::time_point refusal_logged{};

  // Accept errors since the last one logged, and when that was: one line a minute at most.
  uint64_t accept_errors = 0;
  std::chrono::steady_clock::time_point accept_error_logged{};

  void accept();
  void accept_later(const beast::error_code& error);
  // Counts a new connection from `address`; false when that address has its share already.
  bool admit_connection(const std::string& address);
  // At the connection cap: makes room (HttpServerOptions::max_connections) for the connection
  // `newcomer` and returns true, or returns false (accepts then wait for a connection to end).
  bool make_room(uint64_t newcomer);
  std::unique_ptr<BodyBudget> bodies;
  uint64_t session_started(std::weak_ptr<SessionBase> session, std::string address) {
    std::lock_guard lock(mutex);
    sessions.emplace(next_session_id, OpenSession{std::move(session), std::move(address)});
    return next_session_id++;
  }
  void session_ended(uint64_t id) {
    bool resume = false;
    {
      std::lock_guard lock(mutex);
      if (auto found = sessions.find(id); found != sessions.end()) {
        auto count = connections_by_address.find(found->second.address);
        if (count != connections_by_address.end() && --count->second == 0) {
          connections_by_address.erase(count);
        }
        sessions.erase(found);
      }
      --connections;
      if (accept_paused && connections <= options.max_connections && !stopping) {
        accept_paused = false;
        resume = true;
      }
    }
    if (resume) net::post(ioc, [self = shared_from_this()] { self->accept(); });
  }
};

namespace {

// The DNS names the client's certificate was issued to: its subjectAltName DNS entries, or its
// CN where it has none; none without a certificate.
std::vector<std::string> certificate_names(SSL* ssl) {
  std::vector<std::string> names;
  X509* certificate = SSL_get1_peer_certificate(ssl);
  if (certificate == nullptr) return names;
  auto* alt_names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; alt_names != nullptr && i < sk_GENERAL_NAME_num(alt_names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(alt_names, i);
    if (name->type != GEN_DNS) continue;
    const ASN1_STRING* text = name->d.dNSName;
    names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                       static_cast<size_t>(ASN1_STRING_length(text)));
  }
  GENERAL_NAMES_free(alt_names);
  if (names.empty()) {
    X509_NAME* subject = X509_get_subject_name(certificate);
    int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index >= 0) {
      const ASN1_STRING* text = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                         static_cast<size_t>(ASN1_STRING_length(text)));
    }
  }
  X509_free(certificate);
  return names;
}

template <typename Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, std::shared_ptr<HttpServer::State> state, std::string remote)
      : stream_(std::move(stream)),
        deadline_(stream_.get_executor()),
        state_(std::move(state)),
        gone_(std::make_shared<std::atomic<bool>>(false)),
        client_{std::move(remote), {}, {}, gone_} {}
  ~Session() override {
    release_body();
    state_->session_ended(id_);
  }

  // Starts serving the connection; its id among the server's sessions.
  uint64_t run(std::string address) {
    client_.address = address;
    id_ = state_->session_started(this->weak_from_this(), std::move(address));
    idle_since = steady_now_ns();
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(state_->options.read_timeout);
      stream_.async_handshake(
          ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code error) {
            if (error) return self->drop();
            self->client_.certificate_names = certificate_names(self->stream_.native_handle());
            self->read();
          });
    } else {
      read();
    }
    return id_;
  }

  void close_now() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->drop(); });
  }

  void close_if_idle() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->idle_since != 0) beast::get_lowest_layer(self->stream_).cancel();
    });
  }

  bool answer_now() override {
    std::function<void()> answer;
    {
      std::lock_guard lock(reclaim_mutex_);
      answer = std::move(reclaim_);
      reclaim_ = nullptr;
    }
    if (!answer) return false;
    answer();
    return true;
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using Deadline = std::chrono::steady_clock::time_point;

  // The next request. With nothing buffered the connection waits for it: an agent that
  // heartbeats every 30 s gets the idle timeout, a client that has not authenticated a short one.
  // Its headers then have the read timeout, and its body that plus time at the minimum rate.
  void read() {
    if (state_->stopping) return close();
    if (buffer_.size() == 0) return wait_for_next_request();
    read_header();
  }

  std::chrono::seconds idle_timeout() const {
    const auto& options = state_->options;
    return authenticated_ ? options.idle_timeout
                          : std::min(options.idle_timeout, options.unauthenticated_idle_timeout);
  }

  void wait_for_next_request() {
    idle_since = steady_now_ns();
    beast::get_lowest_layer(stream_).expires_after(idle_timeout());
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = this->shared_from_this()](beast::error_code error, size_t n) {
                              self->idle_since = 0;
                              if (error) return self->close();
                              self->buffer_.commit(n);
                              if (self->state_->stopping) return self->close();
                              self->read_header();
                            });
  }

  void read_header() {
    idle_since = 0;
    header_since = steady_now_ns();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_->options.max_header_bytes));
    body_limit_ = state_->options.max_body_bytes;
    parser_->body_limit(body_limit_);
    beast::get_lowest_layer(stream_).expires_never();
    arm_deadline(std::chrono::steady_clock::now() + state_->options.read_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = this->shared_from_this()](beast::error_code error, size_t) {
                               if (error) return self->on_read_error(error);
                               self->on_header();
                             });
  }

  void on_header() {
    header_since = 0;
    const auto& header = parser_->get();
    version_ = header.version();
    keep_alive_ = header.keep_alive();
    const auto& options = state_->options;
    Admission admission;
    if (options.admit) {
      admission = options.admit(header, client_);
    } else {
      admission.max_body_bytes = options.max_body_bytes;
      admission.authenticated = true;
    }
    bool body_pending = !parser_->is_done();
    if (admission.refusal) return refuse(std::move(*admission.refusal), body_pending);
    authenticated_ = authenticated_ || admission.authenticated;
    note_ = std::move(admission.note);
    if (!body_pending) return on_request();

    size_t limit = std::min(admission.max_body_bytes, options.max_body_bytes);
    boost::optional<uint64_t> length = parser_->content_length();
    if (length && *length > limit) {
      return reply_and_close(bhttp::status::payload_too_large,
                             "request body larger than " + std::to_string(limit) + " bytes");
    }
    BodyBudget::Claim claim{length ? static_cast<size_t>(*length) : limit, client_.address,
                            std::move(admission.credential), admission.reserved};
    if (!state_->bodies->take(claim)) {
      set_error_reply(bhttp::status::service_unavailable,
                      "the server is receiving too many request bodies from this client or in "
                      "all; try again later");
      response_.set(bhttp::field::retry_after, std::to_string(kBusyRetryAfterS));
      return close_after_reply();
    }
    claim_ = std::move(claim);
    ++claims_;
    body_limit_ = limit;
    parser_->body_limit(limit);
    body_deadline_ = std::chrono::steady_clock::now() + options.read_timeout;
    arm_deadline(body_deadline_);
    if (expects_continue(header) && buffer_.size() == 0) return send_continue();
    read_body();
  }

  static bool expects_continue(const RequestHeader& header) {
    auto expect = header.find(bhttp::field::expect);
    return header.version() >= 11 && expect != header.end() &&
           beast::iequals(expect->value(), "100-continue");
  }

  // RFC 9110 §10.1.1: a client that asked waits for this before it sends the body.
  void send_continue() {
    continue_.emplace(bhttp::status::continue_, version_);
    bhttp::async_write(stream_, *continue_,
                       [self = this->shared_from_this()](beast::error_code error, size_t) {
                         if (error) return self->drop();
                         self->read_body();
                       });
  }

  // The body a piece at a time: each piece extends the deadline by its share of the minimum rate.
  void read_body() {
    bhttp::async_read_some(stream_, buffer_, *parser_,
                           [self = this->shared_from_this()](beast::error_code error, size_t n) {
                             if (error) return self->on_read_error(error);
                             if (self->parser_->is_done()) return self->on_request();
                             self->extend_body_deadline(n);
                             self->read_body();
                           });
  }

  void extend_body_deadline(size_t bytes) {
    size_t rate = std::max<size_t>(1, state_->options.min_body_bytes_per_second);
    body_deadline_ += std::chrono::nanoseconds(
        static_cast<int64_t>(static_cast<double>(bytes) / static_cast<double>(rate) * 1e9));
    arm_deadline(body_deadline_);
  }

  // A timer of its own, not the stream's: the stream's closes the socket on expiry, and a
  // request that ran out of time is answered 408 first.
  void arm_deadline(Deadline at) {
    uint64_t generation = ++deadline_generation_;
    deadline_.expires_at(at);
    deadline_.async_wait([self = this->shared_from_this(), generation](beast::error_code error) {
      if (error || generation != self->deadline_generation_) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      beast::get_lowest_layer(self->stream_).socket().cancel(ignored);
    });
  }

  void disarm_deadline() {
    ++deadline_generation_;
    deadline_.cancel();
  }

  void on_read_error(beast::error_code error) {
    disarm_deadline();
    header_since = 0;
    if (timed_out_) {
      return reply_and_close(bhttp::status::request_timeout,
                             "the request did not arrive in time (at least " +
                                 std::to_string(state_->options.min_body_bytes_per_second) +
                                 " bytes a second)");
    }
    if (error == bhttp::error::end_of_stream || error == net::error::operation_aborted ||
        error == beast::error::timeout) {
      return close();
    }
    if (error == bhttp::error::body_limit) {
      return reply_and_close(bhttp::status::payload_too_large,
                             "request body larger than " + std::to_string(body_limit_) + " bytes");
    }
    if (error == bhttp::error::header_limit) {
      return reply_and_close(bhttp::status::request_header_fields_too_large,
                             "request headers larger than " +
                                 std::to_string(state_->options.max_header_bytes) + " bytes");
    }
    if (error.category() == beast::error_code(bhttp::error::bad_target).category()) {
      return reply_and_close(bhttp::status::bad_request,
                             "malformed HTTP request: " + error.message());
    }
    drop();
  }

  void on_request() {
    disarm_deadline();
    Request request = parser_->release();
    watch_for_close();
    // The path only, for the log: a query string may carry a token (gProfiler sends key=<token>).
    std::string method(request.method_string());
    std::string_view target(request.target().data(), request.target().size());
    std::string path(target.substr(0, target.find('?')));
    auto responder = std::make_shared<SessionResponder>(this->shared_from_this());
    try {
      state_->handler(std::move(request), client_, responder, std::exchange(note_, {}));
    } catch (const std::exception& exception) {
      spdlog::error("{} {}: internal error: {}", method, path, exception.what());
      responder->reply(json_response(bhttp::status::internal_server_error,
                                     R"({"success":false,"message":"internal server error"})"));
    }
  }

  void release_body() {
    if (claim_) state_->bodies->give_back(*claim_);
    claim_.reset();
  }

  // Under the lock that respond() takes to forget it: a reply that comes first wins. A held
  // request's body no longer counts as in flight: the handler keeps what it needs of it.
  void hold(std::function<void()> answer_now, const std::atomic<bool>& replied) {
    {
      std::lock_guard lock(reclaim_mutex_);
      if (replied) return;
      reclaim_ = std::move(answer_now);
      held_since = steady_now_ns();
    }
    net::post(stream_.get_executor(), [self = this->shared_from_this(), claim = claims_.load()] {
      if (self->claims_ == claim) self->release_body();  // not a later request's
    });
  }

  // Answers the request read last, once, on the connection's strand.
  class SessionResponder final : public Responder {
   public:
    explicit SessionResponder(std::shared_ptr<Session> session) : session_(std::move(session)) {}
    void reply(Response response) override {
      if (replied_.exchange(true)) return;
      auto session = std::move(session_);
      net::post(session->stream_.get_executor(),
                [session, response = std::move(response)]() mutable {
                  session->respond(std::move(response));
                });
    }
    net::any_io_executor executor() const override { return executor_; }
    void on_reclaim(std::function<void()> answer_now) override {
      holder_->hold(std::move(answer_now), replied_);
    }

   private:
    std::shared_ptr<Session> session_;
    Session* holder_ = session_.get();  // session_ is given up at the reply
    net::any_io_executor executor_ = session_->stream_.get_executor();
    std::atomic<bool> replied_{false};
  };

  void respond(Response response) {
    {
      std::lock_guard lock(reclaim_mutex_);
      reclaim_ = nullptr;
      held_since = 0;
    }
    release_body();
    response_ = std::move(response);
    response_.version(version_);
    response_.keep_alive(keep_alive_ && !state_->stopping && !evicted);
    write();
  }

  // A request refused on its headers: its body is not read, and a client refused its
  // credentials does not keep the connection.
  void refuse(Response response, bool body_pending) {
    disarm_deadline();
    auto code = response.result();
    response_ = std::move(response);
    response_.version(version_);
    if (body_pending) return close_after_reply();
    bool credentials = code == bhttp::status::unauthorized || code == bhttp::status::forbidden;
    response_.keep_alive(keep_alive_ && !credentials && !state_->stopping);
    write();
  }

  // The request was not read to its end: the client may be sending still.
  void reply_and_close(bhttp::status status, const std::string& message) {
    set_error_reply(status, message);
    close_after_reply();
  }

  void close_after_reply() {
    disarm_deadline();
    response_.version(version_);
    response_.keep_alive(false);
    request_unread_ = true;
    write();
  }

  void set_error_reply(bhttp::status status, const std::string& message) {
    std::string escaped;
    for (char c : message) {
      if (c == '"' || c == '\\') escaped += '\\';
      escaped += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
    }
    response_ = json_response(status, R"({"success":false,"message":")" + escaped + "\"}");
  }

  void write() {
    response_.prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(kWriteTimeout);
    bhttp::async_write(
        stream_, response_, [self = this->shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->drop();
          if (self->request_unread_) return self->discard_until_closed();
          if (self->watching_) {
            // The watch's read goes on as the wait for the next request.
            self->after_watch_ =
                self->response_.keep_alive() ? AfterWatch::kNext : AfterWatch::kClose;
            if (self->after_watch_ == AfterWatch::kClose) {
              return beast::get_lowest_layer(self->stream_).cancel();
            }
            // The stream's own timeout is for operations begun after it is set.
            self->idle_since = steady_now_ns();
            return self->arm_deadline(std::chrono::steady_clock::now() + self->idle_timeout());
          }
          if (!self->response_.keep_alive()) return self->close();
          self->read();
        });
  }

  // While the handler works, a read waits on the connection: a client that closes it is marked
  // gone (Client::gone), so that long work for it can stop. What it reads of a next request is
  // kept for it. One read and one write may be outstanding at once, with TLS too.
  void watch_for_close() {
    if (buffer_.size() > 0) return;  // a next request is here already: nothing to watch
    watching_ = true;
    after_watch_ = AfterWatch::kNothing;
    stream_.async_read_some(buffer_.prepare(kFirstRead),
                            [self = this->shared_from_this()](beast::error_code error, size_t n) {
                              self->watching_ = false;
                              if (!error) self->buffer_.commit(n);
                              switch (self->after_watch_) {
                                case AfterWatch::kNothing:
                                  if (error) *self->gone_ = true;
                                  return;  // the reply reads on from the buffer
                                case AfterWatch::kClose:
                                  return self->close();
                                case AfterWatch::kNext:
                                  self->idle_since = 0;
                                  if (error || self->state_->stopping) return self->close();
                                  return self->read_header();
                              }
                            });
  }

  void close() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(kShutdownTimeout);
      stream_.async_shutdown(
          [self = this->shared_from_this()](beast::error_code) { self->drop(); });
    } else {
      drop();
    }
  }

  // A socket closed with bytes unread answers them with a reset, and a client still writing (curl
  // uploading a body) fails on the reset before it reads the reply. So what the client still sends
  // is read below TLS and thrown away until it closes, for kDiscardTimeout at most. No TLS
  // close_notify follows: the reply has its Content-Length, so the client knows it has all of it.
  void discard_until_closed() {
    beast::get_lowest_layer(stream_).expires_after(kDiscardTimeout);
    buffer_.clear();
    discard_some();
  }

  void discard_some() {
    beast::get_lowest_layer(stream_).async_read_some(
        buffer_.prepare(kDiscardRead),
        [self = this->shared_from_this()](beast::error_code error, size_t) {
          if (error) return self->drop();
          self->discard_some();
        });
  }

  void drop() {
    disarm_deadline();
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  Stream stream_;
  net::steady_timer deadline_;
  std::shared_ptr<HttpServer::State> state_;
  std::shared_ptr<std::atomic<bool>> gone_;  // Client::gone
  Client client_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::empty_body>> continue_;
  Response response_;
  Deadline body_deadline_{};
  uint64_t deadline_generation_ = 0;
  uint64_t id_ = 0;
  size_t body_limit_ = 0;  // of the request being read
  std::any note_;          // the admission's, for the request being read
  enum class AfterWatch { kNothing, kNext, kClose };
  bool watching_ = false;  // watch_for_close()'s read is outstanding
  AfterWatch after_watch_ = AfterWatch::kNothing;
  std::optional<BodyBudget::Claim> claim_;  // of the server's in-flight body budget
  std::atomic<uint64_t> claims_{0};         // taken on this connection
  std::mutex reclaim_mutex_;
  std::function<void()> reclaim_;  // answers the request held for later
  unsigned version_ = 11;          // of the request being answered
  bool keep_alive_ = false;
  bool request_unread_ = false;
  bool authenticated_ = false;
  bool timed_out_ = false;
};

}  // namespace

// An accept that failed (EMFILE, ENFILE, ENOBUFS) fails again at once: the connection waits in
// the backlog. Trying again in a loop took a core; the server waits 100 ms, and logs once a minute.
void HttpServer::State::accept_later(const beast::error_code& error) {
  constexpr auto kAcceptRetry = std::chrono::milliseconds(100);
  constexpr auto kLogEvery = std::chrono::minutes(1);
  uint64_t errors = 0;
  {
    std::lock_guard lock(mutex);
    ++accept_errors;
    auto now = std::chrono::steady_clock::now();
    if (now - accept_error_logged >= kLogEvery) {
      accept_error_logged = now;
      errors = std::exchange(accept_errors, 0);
    }
  }
  if (errors > 0) {
    spdlog::warn(
        "cannot accept connections: {} ({} time{} since the last report); trying again "
        "every {} ms",
        error.message(), errors, errors == 1 ? "" : "s", kAcceptRetry.count());
  }
  auto timer = std::make_shared<net::steady_timer>(ioc, kAcceptRetry);
  timer->async_wait([self = shared_from_this(), timer](beast::error_code) {
    if (!self->stopping) self->accept();
  });
}

bool HttpServer::State::admit_connection(const std::string& address) {
  constexpr auto kLogEvery = std::chrono::minutes(1);
  uint64_t refused = 0;
  {
    std::lock_guard lock(mutex);
    size_t& open = connections_by_address[address];
    if (options.max_connections_per_address == 0 || open < options.max_connections_per_address) {
      ++open;
      ++connections;
      return true;
    }
    ++refused_by_address;
    auto now = std::chrono::steady_clock::now();
    if (now - refusal_logged >= kLogEvery) {
      refusal_logged = now;
      refused = std::exchange(refused_by_address, 0);
    }
  }
  if (refused > 0) {
    spdlog::warn(
        "refused {} connection{} from {}, which had {} open (--max-connections-per-address)",
        refused, refused == 1 ? "" : "s", address, options.max_connections_per_address);
  }
  return false;
}

bool HttpServer::State::make_room(uint64_t newcomer) {
  // Released after the lock: a session's last reference ends it, and its end takes the lock.
  std::vector<std::shared_ptr<SessionBase>> open;
  struct Oldest {
    SessionBase* session = nullptr;
    int64_t since = 0;
    void consider(SessionBase* candidate, int64_t candidate_since) {
      if (candidate_since != 0 && (session == nullptr || candidate_since < since)) {
        session = candidate;
        since = candidate_since;
      }
    }
  };
  Oldest idle, held, header;
  {
    std::lock_guard lock(mutex);
    // The connection just accepted is counted: one past the cap makes room or stops accepts.
    if (connections <= options.max_connections) return true;
    open.reserve(sessions.size());
    for (auto& [id, entry] : sessions) {
      auto session = entry.session.lock();
      if (!session || session->evicted || id == newcomer) continue;
      idle.consider(session.get(), session->idle_since);
      held.consider(session.get(), session->held_since);
      header.consider(session.get(), session->header_since);
      open.push_back(std::move(session));
    }
    if (idle.session == nullptr && held.session == nullptr && header.session == nullptr) {
      accept_paused = true;  // resumed by the session that ends next
      return false;
    }
    for (SessionBase* chosen : {idle.session, held.session, header.session}) {
      if (chosen != nullptr) {
        chosen->evicted = true;
        break;
      }
    }
  }
  if (idle.session != nullptr) {
    idle.session->close_now();
  } else if (held.session != nullptr) {
    // Its reply goes out without keep-alive; one sent meanwhile leaves the connection idle.
    if (!held.session->answer_now()) held.session->close_if_idle();
  } else {
    header.session->close_now();
  }
  return true;
}

void HttpServer::State::accept() {
  acceptor.async_accept(net::make_strand(ioc), [self = shared_from_this()](beast::error_code error,
                                                                           tcp::socket socket) {
    if (self->stopping || error == net::error::operation_aborted) return;
    // A client that gave up before its connection was taken: nothing to wait for.
    if (error == net::error::connection_aborted) return self->accept();
    if (error) return self->accept_later(error);
    beast::error_code no_peer;
    auto peer = socket.remote_endpoint(no_peer);
    if (no_peer) return self->accept();
    std::string address = peer.address().to_string();
    if (!self->admit_connection(address)) {
      beast::error_code ignored;
      socket.close(ignored);
      return self->accept();
    }
    // A response goes out in more than one write (headers, body; TLS records): under Nagle's
    // algorithm the last waits for the client's delayed ACK, 40 ms on Linux.
    beast::error_code no_delay_refused;  // the connection works as well without
    socket.set_option(tcp::no_delay(true), no_delay_refused);
    std::string remote = address + ":" + std::to_string(peer.port());
    uint64_t newcomer = 0;
    if (self->options.tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      newcomer = std::make_shared<Session<TlsStream>>(
                     TlsStream(std::move(socket), *self->options.tls), self, std::move(remote))
                     ->run(std::move(address));
    } else {
      newcomer = std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)),
                                                              self, std::move(remote))
                     ->run(std::move(address));
    }
    if (self->make_room(newcomer)) self->accept();
  });
}

Result<std::shared_ptr<ssl::context>> make_tls_context(const std::string& cert,
                                                       const std::string& key,
                                                       const std::string& client_ca,
                                                       TlsVersion min_version) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  beast::error_code error;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       error);
  // Most connections are idle agents between heartbeats: their TLS buffers (some 34 KiB each)
  // are given back while nothing is in flight.
  SSL_CTX_set_mode(context->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  // Forward secrecy and authenticated encryption: no RSA key exchange, no CBC.
  constexpr char kTls12Ciphers[] = "ECDHE+AESGCM:ECDHE+CHACHA20";
  if (SSL_CTX_set_cipher_list(context->native_handle(), kTls12Ciphers) != 1 ||
      SSL_CTX_set_min_proto_version(context->native_handle(), min_version == TlsVersion::k1_3
                                                                  ? TLS1_3_VERSION
                                                                  : TLS1_2_VERSION) != 1) {
    return Error(ErrorKind::kTls, "OpenSSL refused the server's cipher list or TLS version");
  }
  if (context->use_certificate_chain_file(cert, error); error) {
    return Error(ErrorKind::kTls, "cannot load the certificate " + cert + ": " + error.message());
  }
  if (context->use_private_key_file(key, ssl::context::pem, error); error) {
    return Error(ErrorKind::kTls, "cannot load the private key " + key + ": " + error.message());
  }
  if (!client_ca.empty()) {
    if (context->load_verify_file(client_ca, error); error) {
      return Error(ErrorKind::kTls,
                   "cannot load the client CA " + client_ca + ": " + error.message());
    }
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return context;
}

Response json_response(bhttp::status status, const std::string& body) {
  Response response(status, 11);
  response.set(bhttp::field::content_type, "application/json");
  response.set(bhttp::field::server, "dormant-server");
  response.body() = body;
  return response;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options, Handler handler) {
  return start(std::move(options),
               [handler = std::move(handler)](Request request, const Client& client,
                                              std::shared_ptr<Responder> responder, std::any) {
                 responder->reply(handler(request, client.remote));
               });
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                      AsyncHandler handler) {
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  state->handler = std::move(handler);
  state->bodies = std::make_unique<BodyBudget>(state->options.max_inflight_body_bytes,
                                               state->options.max_body_bytes);
  beast::error_code error;
  auto address = net::ip::make_address(state->options.address, error);
  if (error) {
    return Error::invalid_argument("'" + state->options.address + "' is not an IP address");
  }
  tcp::endpoint endpoint(address, state->options.port);
  state->acceptor.open(endpoint.protocol(), error);
  if (!error) state->acceptor.set_option(net::socket_base::reuse_address(true), error);
  if (!error) state->acceptor.bind(endpoint, error);
  if (!error) state->acceptor.listen(net::socket_base::max_listen_connections, error);
  if (error) {
    return Error(ErrorKind::kNetwork, "cannot listen on " + state->options.address + ":" +
                                          std::to_string(state->options.port) + ": " +
                                          error.message());
  }
  state->accept();
  state->work.emplace(state->ioc.get_executor());
  for (int i = 0; i < std::max(1, state->options.threads); ++i) {
    state->threads.emplace_back([state] { state->ioc.run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(state));
}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

uint16_t HttpServer::port() const {
  beast::error_code error;
  return state_->acceptor.local_endpoint(error).port();
}

size_t HttpServer::open_connections() const {
  std::lock_guard lock(state_->mutex);
  return state_->connections;
}

size_t HttpServer::inflight_body_bytes() const { return state_->bodies->in_use(); }

void HttpServer::stop(std::chrono::milliseconds drain) {
  if (state_->stopping.exchange(true)) return;
  net::post(state_->ioc, [state = state_] {
    beast::error_code ignored;
    state->acceptor.close(ignored);
  });
  auto for_each_session = [this](const std::function<void(SessionBase&)>& action) {
    std::vector<std::shared_ptr<SessionBase>> open;
    {
      std::lock_guard lock(state_->mutex);
      for (auto& [id, entry] : state_->sessions) {
        if (auto session = entry.session.lock()) open.push_back(std::move(session));
      }
    }
    for (auto& session : open) action(*session);
  };
  auto wait_for_no_connections = [this](std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  // Requests held for later are answered now; requests in flight finish, then close.
  for_each_session([](SessionBase& session) { session.answer_now(); });
  for_each_session([](SessionBase& session) { session.close_if_idle(); });
  wait_for_no_connections(drain);
  for_each_session([](SessionBase& session) { session.close_now(); });
  wait_for_no_connections(kShutdownTimeout);
  state_->work.reset();
  // With the acceptor and every connection closed the threads run out of work and end; stop()
  // is the fallback for an operation that will not finish.
  auto deadline = std::chrono::steady_clock::now() + kShutdownTimeout;
  while (!state_->ioc.stopped() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  state_->ioc.stop();
  for (auto& thread : state_->threads) {
    if (thread.joinable()) thread.join();
  }
  // Completions still queued hold the state alive: run them so that everything is released.
  state_->ioc.restart();
  state_->ioc.poll();
}

}  // namespace dormant::server::http
