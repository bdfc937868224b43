#include "server/api/tokens.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "common/atomic_file.h"
#include "common/text.h"

namespace dormant::server::api {
namespace {

constexpr std::pair<std::string_view, Role> kRoleNames[] = {
    {"agent", kAgentRole}, {"operator", kOperatorRole}, {"reader", kReaderRole}};

}  // namespace

std::string role_names(Roles roles) {
  std::string names;
  for (auto [name, role] : kRoleNames) {
    if (roles & role) names += (names.empty() ? "" : ", ") + std::string(name);
  }
  return names.empty() ? "none" : names;
}

Result<Tokens> Tokens::load(const std::filesystem::path& file, size_t* untyped) {
  auto text = read_file(file);
  if (!text) return std::move(text).take_error().with_context("reading the tokens file");
  std::vector<std::pair<std::string_view, Roles>> tokens;
  size_t without_role = 0;
  std::string_view rest = *text;
  for (int number = 1; !rest.empty(); ++number) {
    size_t newline = rest.find('\n');
    std::string_view line = trim(rest.substr(0, newline));
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
    if (line.empty() || line.front() == '#') continue;
    size_t blank = line.find_first_of(" \t");
    std::string_view token = line.substr(0, blank);
    std::string_view role = blank == std::string_view::npos ? "" : trim(line.substr(blank));
    if (role.empty()) {
      ++without_role;
      tokens.emplace_back(token, kAllRoles);
      continue;
    }
    Roles roles = 0;
    for (auto [name, bit] : kRoleNames) roles |= role == name ? bit : 0;
    if (roles == 0) {
      return Error::invalid_argument(file.string() + " line " + std::to_string(number) +
                                     ": unknown role '" + std::string(role) +
                                     "' (agent, operator or reader)");
    }
    tokens.emplace_back(token, roles);
  }
  if (tokens.empty()) {
    return Error::invalid_argument(file.string() +
                                   " holds no token (one 'TOKEN ROLE' per line, '#' comments)");
  }
  if (untyped != nullptr) *untyped = without_role;
  return of(tokens);
}

Tokens Tokens::of(const std::vector<std::string_view>& tokens) {
  std::vector<std::pair<std::string_view, Roles>> every_role;
  for (std::string_view token : tokens) every_role.emplace_back(token, kAllRoles);
  return of(every_role);
}

Tokens Tokens::of(const std::vector<std::pair<std::string_view, Roles>>& tokens) {
  Tokens result;
  for (auto [token, roles] : tokens) result.known_.emplace_back(digest_of(token), roles);
  return result;
}

Tokens::Presented Tokens::check(std::string_view presented) const {
  Presented result;
  if (presented.empty()) return result;
  Digest digest = digest_of(presented);
  for (const auto& [known, its_roles] : known_) {  // no early exit: every token costs the same
    bool same = CRYPTO_memcmp(known.data(), digest.data(), digest.size()) == 0;
    result.roles |= same ? its_roles : 0;
  }
  if (result.roles != 0)
    result.credential = to_hex({reinterpret_cast<const char*>(digest.data()), 8});
  return result;
}

Tokens::Digest Tokens::digest_of(std::string_view token) {
  Digest digest;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

}  // namespace dormant::server::api
