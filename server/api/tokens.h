// The API tokens the server accepts, each with its roles. Only their SHA-256 digests are kept, and
// a presented token is compared digest to digest in constant time, so neither memory nor timing
// gives one away.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace dormant::server::api {

// What a token may do, as bits.
enum Role : uint8_t {
  kAgentRole = 1,     // heartbeats, completions, uploads
  kOperatorRole = 2,  // profiling requests, and everything a reader may
  kReaderRole = 4,    // hosts, commands, requests, profiles, metrics: read only
  kAllRoles = kAgentRole | kOperatorRole | kReaderRole,
};
using Roles = uint8_t;

// "agent", "operator, reader"...: the roles' names, for messages.
std::string role_names(Roles roles);

class Tokens {
 public:
  // One "TOKEN ROLE" per line, ROLE one of agent, operator, reader; a token on several lines has
  // each line's role. A line with the token alone gives it every role, as files written before
  // roles did: `untyped` counts them, for a warning. Blank lines and lines starting with '#' are
  // skipped, surrounding blanks trimmed. A file with no token, or an unknown role, is an error.
  static Result<Tokens> load(const std::filesystem::path& file, size_t* untyped = nullptr);
  static Tokens of(const std::vector<std::string_view>& tokens);  // every role
  static Tokens of(const std::vector<std::pair<std::string_view, Roles>>& tokens);

  // A presented token as the server knows it: its roles (0 when it does not know it), and a
  // name for it that gives nothing of the secret away (its digest's first 8 bytes in hex; empty
  // when unknown), to count what it holds.
  struct Presented {
    Roles roles = 0;
    std::string credential;
  };
  Presented check(std::string_view presented) const;
  Roles roles_of(std::string_view presented) const { return check(presented).roles; }
  bool accepts(std::string_view presented) const { return roles_of(presented) != 0; }
  size_t size() const { return known_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest digest_of(std::string_view token);

  std::vector<std::pair<Digest, Roles>> known_;
};

}  // namespace dormant::server::api
