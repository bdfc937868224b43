#include "tests/support/postgres_cluster.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace dormant::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::string_view kSuperuser = "dormant";

// The newest /usr/lib/postgresql/<version>/bin with a server in it.
fs::path server_bin_dir() {
  std::vector<fs::path> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", error)) {
    if (fs::exists(entry.path() / "bin" / "postgres")) found.push_back(entry.path() / "bin");
  }
  if (found.empty()) return {};
  std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
    return std::atoi(a.parent_path().filename().c_str()) <
           std::atoi(b.parent_path().filename().c_str());
  });
  return found.back();
}

// The account the server runs as: ours, or postgres (then nobody) when we are root.
const passwd* server_account() {
  if (::geteuid() != 0) return ::getpwuid(::geteuid());
  for (const char* name : {"postgres", "nobody"}) {
    if (const passwd* account = ::getpwnam(name)) return account;
  }
  return nullptr;
}

// argv that runs `program` as the server's account.
std::vector<std::string> as_server_account(std::vector<std::string> argv) {
  if (::geteuid() != 0) return argv;
  const passwd* account = server_account();
  std::vector<std::string> wrapped = {"setpriv", "--reuid=" + std::to_string(account->pw_uid),
                                      "--regid=" + std::to_string(account->pw_gid),
                                      "--clear-groups", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

Result<void> run(std::vector<std::string> argv, const std::string& doing) {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.stdout_to = Redirect::null();
  auto child = Subprocess::spawn(options);
  if (!child) return std::move(child).take_error().with_context(doing);
  (void)(*child)->drain_stderr(deadline_after(120s));
  auto status = (*child)->wait(deadline_after(120s));
  if (!status) return std::move(status).take_error().with_context(doing);
  if (!status->success()) {
    return Error(ErrorKind::kSystem, doing + " failed: " + (*child)->stderr_tail());
  }
  return ok();
}

Result<void> give_to_server_account(const fs::path& path) {
  if (::geteuid() != 0) return ok();
  const passwd* account = server_account();
  if (::chown(path.c_str(), account->pw_uid, account->pw_gid) != 0) {
    return Error::from_errno("chown " + path.string());
  }
  return ok();
}

// The initdb'd template, made under a lock by the first test that needs it.
Result<fs::path> template_cluster(const fs::path& bin) {
  fs::path base =
      fs::temp_directory_path() / ("dormant-pg-template-" + bin.parent_path().filename().string() +
                                   "-" + std::to_string(::geteuid()));
  fs::path data = base / "data";
  if (fs::exists(data / "PG_VERSION") && fs::exists(base / "complete")) return data;
  fs::create_directories(base);
  UniqueFd lock(::open((base.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock || ::flock(lock.get(), LOCK_EX) != 0)
    return Error::from_errno("locking " + base.string());
  if (fs::exists(base / "complete")) return data;
  fs::remove_all(data);
  if (auto given = give_to_server_account(base); !given) return std::move(given).take_error();
  auto made = run(as_server_account({(bin / "initdb").string(), "-D", data.string(), "-U",
                                     std::string(kSuperuser), "-A", "trust", "-E", "UTF8",
                                     "--no-locale", "--no-sync", "--no-instructions"}),
                  "initdb into " + data.string());
  if (!made) return std::move(made).take_error();
  std::FILE* marker = std::fopen((base / "complete").c_str(), "w");
  if (marker != nullptr) std::fclose(marker);
  return data;
}

}  // namespace

std::string PostgresCluster::unavailable_reason() {
  if (server_bin_dir().empty()) {
    return "no PostgreSQL server under /usr/lib/postgresql (scripts/install-deps installs it)";
  }
  if (server_account() == nullptr) return "no unprivileged account to run PostgreSQL as";
  return "";
}

Result<std::unique_ptr<PostgresCluster>> PostgresCluster::start() {
  if (std::string why = unavailable_reason(); !why.empty()) {
    return Error(ErrorKind::kUnavailable, why);
  }
  fs::path bin = server_bin_dir();
  auto source = template_cluster(bin);
  if (!source) return std::move(source).take_error();
  std::string pattern = (fs::temp_directory_path() / "dormant-pg-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return Error::from_errno("mkdtemp " + pattern);
  std::unique_ptr<PostgresCluster> cluster(new PostgresCluster(pattern));
  if (auto given = give_to_server_account(cluster->root_); !given) {
    return std::move(given).take_error();
  }
  auto copied =
      run(as_server_account({"cp", "-a", source->string(), (cluster->root_ / "data").string()}),
          "copying the template cluster");
  if (!copied) return std::move(copied).take_error();
  if (auto launched = cluster->launch(); !launched) return std::move(launched).take_error();
  return cluster;
}

Result<void> PostgresCluster::launch() {
  fs::path bin = server_bin_dir();
  SpawnOptions options;
  options.argv = as_server_account(
      {(bin / "postgres").string(), "-D", (root_ / "data").string(), "-k", root_.string(), "-c",
       "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off", "-c",
       "max_connections=300", "-c", "shared_buffers=16MB", "-c", "logging_collector=off"});
  options.stdout_to = Redirect::null();
  options.stderr_to = Redirect::file(root_ / "server.log", /*append=*/true);
  auto server = Subprocess::spawn(options);
  if (!server) return std::move(server).take_error().with_context("starting postgres");
  server_ = std::move(*server);
  std::string conninfo = url("postgres");
  for (int i = 0; i < 300; ++i) {
    if (PQping(conninfo.c_str()) == PQPING_OK) return ok();
    if (auto ended = server_->try_wait()) {
      server_.reset();
      return Error(ErrorKind::kSystem,
                   "postgres exited at start; see " + (root_ / "server.log").string());
    }
    std::this_thread::sleep_for(50ms);
  }
  return Error(ErrorKind::kTimeout, "postgres did not answer within 15 s");
}

PostgresCluster::~PostgresCluster() {
  (void)stop();
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

std::string PostgresCluster::url(const std::string& name) const {
  return "postgresql://" + std::string(kSuperuser) + "@/" + name + "?host=" + root_.string();
}

Result<std::string> PostgresCluster::create_database() {
  std::string name = "test" + std::to_string(++databases_);
  PGconn* connection = PQconnectdb(url("postgres").c_str());
  std::string error;
  if (PQstatus(connection) != CONNECTION_OK) {
    error = PQerrorMessage(connection);
  } else {
    PGresult* result = PQexec(connection, ("CREATE DATABASE " + name).c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) error = PQresultErrorMessage(result);
    PQclear(result);
  }
  PQfinish(connection);
  if (!error.empty()) return Error(ErrorKind::kSystem, "creating database " + name + ": " + error);
  return url(name);
}

Result<void> PostgresCluster::stop() {
  if (!server_) return ok();
  ::kill(server_->pid(), SIGINT);
  auto ended = server_->wait(deadline_after(30s));
  if (!ended) server_->terminate(1s);
  server_.reset();
  return ok();
}

Result<void> PostgresCluster::restart() {
  if (server_) return Error::invalid_argument("the server is running");
  return launch();
}

}  // namespace dormant::testing
