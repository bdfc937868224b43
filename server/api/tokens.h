// The API tokens the server accepts. Only their SHA-256 digests are kept, and a presented token
// is compared digest to digest in constant time, so neither memory nor timing gives one away.
#pragma once

#include <array>
#include <filesystem>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace dormant::server::api {

class Tokens {
 public:
  // One token per line; blank lines and lines starting with '#' are skipped, surrounding
  // blanks trimmed. A file with no token is an error: nobody could use the server.
  static Result<Tokens> load(const std::filesystem::path& file);
  static Tokens of(const std::vector<std::string_view>& tokens);

  bool accepts(std::string_view presented) const;
  size_t size() const { return digests_.size(); }

 private:
  using Digest = std::array<unsigned char, 32>;
  static Digest digest_of(std::string_view token);

  std::vector<Digest> digests_;
};

}  // namespace dormant::server::api
