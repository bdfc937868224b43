// A PostgreSQL server of a test's own: Debian's server binaries, a cluster in a temporary folder
// owned by an unprivileged user (the postgres account when the test runs as root), listening on a
// Unix socket in that folder only. Stopped, and its folder removed, when the object goes.
//
// initdb runs once per machine, user and PostgreSQL version, into a template folder that every
// cluster copies: a cluster starts in a fraction of a second.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "common/result.h"
#include "common/subprocess.h"

namespace dormant::testing {

class PostgresCluster {
 public:
  // Why no cluster can be started here ("" when one can): no server binaries, or root without
  // an unprivileged account to run them as.
  static std::string unavailable_reason();

  static Result<std::unique_ptr<PostgresCluster>> start();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;
  ~PostgresCluster();

  // A new, empty database; returns its URL.
  Result<std::string> create_database();
  // The URL of database `name`.
  std::string url(const std::string& name) const;

  // Fast shutdown (SIGINT): connections are ended, what was committed stays.
  Result<void> stop();
  // Starts the server again on the same data, after stop().
  Result<void> restart();
  bool running() const { return server_ != nullptr; }

 private:
  explicit PostgresCluster(std::filesystem::path root) : root_(std::move(root)) {}
  Result<void> launch();

  std::filesystem::path root_;  // data/, the socket, server.log
  std::unique_ptr<Subprocess> server_;
  int databases_ = 0;
};

}  // namespace dormant::testing
