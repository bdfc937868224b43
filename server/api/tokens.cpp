#include "server/api/tokens.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "common/atomic_file.h"
#include "common/text.h"

namespace dormant::server::api {

Result<Tokens> Tokens::load(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text) return std::move(text).take_error().with_context("reading the tokens file");
  std::vector<std::string_view> tokens;
  std::string_view rest = *text;
  while (!rest.empty()) {
    size_t newline = rest.find('\n');
    std::string_view line = trim(rest.substr(0, newline));
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    if (!line.empty() && line.front() != '#') tokens.push_back(line);
  }
  if (tokens.empty()) {
    return Error::invalid_argument(file.string() + " holds no token (one per line, '#' comments)");
  }
  return of(tokens);
}

Tokens Tokens::of(const std::vector<std::string_view>& tokens) {
  Tokens result;
  for (std::string_view token : tokens) result.digests_.push_back(digest_of(token));
  return result;
}

bool Tokens::accepts(std::string_view presented) const {
  if (presented.empty()) return false;
  Digest digest = digest_of(presented);
  bool accepted = false;
  for (const Digest& known : digests_) {  // no early exit: every token costs the same
    accepted |= CRYPTO_memcmp(known.data(), digest.data(), digest.size()) == 0;
  }
  return accepted;
}

Tokens::Digest Tokens::digest_of(std::string_view token) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

}  // namespace dormant::server::api
