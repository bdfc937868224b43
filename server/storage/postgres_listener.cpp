#include "server/storage/postgres_listener.h"

#include <cerrno>

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server/storage/postgres_database.h"

namespace dormant::server::storage {
namespace {

constexpr std::chrono::milliseconds kFirstRetry{200};
constexpr std::chrono::milliseconds kLastRetry{5000};

}  // namespace

PostgresListener::PostgresListener(std::string url, OnNotification notified,
                                   std::function<void()> missed)
    : url_(std::move(url)),
      notified_(std::move(notified)),
      missed_(std::move(missed)),
      stop_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { run(); });
}

PostgresListener::~PostgresListener() {
  stopping_ = true;
  uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

bool PostgresListener::pause(std::chrono::milliseconds delay) {
  pollfd stop{stop_.get(), POLLIN, 0};
  ::poll(&stop, 1, static_cast<int>(delay.count()));
  return !stopping_;
}

void PostgresListener::run() {
  std::chrono::milliseconds retry = kFirstRetry;
  while (!stopping_) {
    auto started = std::chrono::steady_clock::now();
    if (!listen_once()) return;
    // A connection that lasted is worth a quick retry; one that keeps failing, a slower one.
    retry = std::chrono::steady_clock::now() - started > kLastRetry
                ? kFirstRetry
                : std::min(retry * 2, kLastRetry);
    if (!pause(retry)) return;
  }
}

bool PostgresListener::listen_once() {
  auto db = PostgresDatabase::connect(url_);
  if (!db) {
    spdlog::warn("long-polls: cannot listen for commands: {}", db.error().message());
    return !stopping_;
  }
  if (auto listening = (*db)->execute("LISTEN " + std::string(kCommandsChannel)); !listening) {
    spdlog::warn("long-polls: {}", listening.error().message());
    return !stopping_;
  }
  // What was notified while no connection listened is lost: those waiting look again.
  if (listened_before_) missed_();
  listened_before_ = true;
  PGconn* connection = (*db)->native_handle();
  while (!stopping_) {
    pollfd fds[2] = {{PQsocket(connection), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return false;
    if (fds[1].revents != 0) return false;
    if (fds[0].revents == 0) continue;
    if (PQconsumeInput(connection) == 0) {
      spdlog::warn("long-polls: the connection listening for commands broke: {}",
                   PQerrorMessage(connection));
      return true;
    }
    while (PGnotify* notification = PQnotifies(connection)) {
      std::string payload = notification->extra != nullptr ? notification->extra : "";
      PQfreemem(notification);
      notified_(payload);
    }
  }
  return false;
}

}  // namespace dormant::server::storage
