// The additional_args table: each distinct additional_args object once, named by the SHA-256 of
// its text. Requests and commands refer to it by digest, so that a request for 10,000 hosts keeps
// its arguments once, not once per host. Callers hold the transaction.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/storage/database.h"

namespace dormant::server::storage {

// Stores objects for one transaction: each distinct one once, and one equal to the last it stored
// without serializing or hashing it again (a request's hosts mostly share their arguments).
class ArgsWriter {
 public:
  // The digest `args` is stored under.
  Result<std::string> store(Database& db, const nlohmann::json& args);

 private:
  nlohmann::json last_;
  std::string last_digest_;
};

// The object stored under `digest`; nullopt where none is.
Result<std::optional<nlohmann::json>> read_args(Database& db, const std::string& digest);

// Deletes up to `batch` objects that no request or command refers to any more. Returns how many.
Result<int64_t> delete_unreferenced_args(Database& db, int64_t batch);

// Migration 3: moves the objects that commands and requests held in their own rows into the
// table, then drops those columns (and commands.combined_config, which repeated them).
Result<void> move_args_to_their_table(Database& db);

}  // namespace dormant::server::storage
