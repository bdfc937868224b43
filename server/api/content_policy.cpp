#include "server/api/content_policy.h"

#include <array>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/rand.h>

namespace dormant::server::api {

std::string new_nonce() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("OpenSSL's random generator failed");
  }
  std::array<unsigned char, 4 * ((bytes.size() + 2) / 3) + 1> text{};
  int length = EVP_EncodeBlock(text.data(), bytes.data(), static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(text.data()), static_cast<size_t>(length));
}

void restrict_document(http::Response& response, const std::string& nonce) {
  const std::string source = "'nonce-" + nonce + "'";
  response.set("Content-Security-Policy",
               "default-src 'none'; script-src " + source + "; style-src " + source +
                   "; img-src 'self' data: blob:; connect-src 'self'; frame-src 'self' blob:; "
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'self'");
  response.set("X-Content-Type-Options", "nosniff");
}

}  // namespace dormant::server::api
