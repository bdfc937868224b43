#include "heartbeat/connection_hint.h"

#include <openssl/x509_vfy.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>

namespace dormant::heartbeat {
namespace {

namespace asio = boost::asio;

bool mentions(const boost::system::error_code& error, const char* text) {
  return error.message().find(text) != std::string::npos;
}

// A TLS server closes on a plain request, or answers it with an alert that is no HTTP.
bool plain_request_refused(const boost::system::error_code& error) {
  namespace http = boost::beast::http;
  return error == http::error::end_of_stream || error == asio::error::eof ||
         error == asio::error::connection_reset || error == asio::error::broken_pipe ||
         error == http::error::bad_version || error == http::error::bad_line_ending ||
         error == http::error::bad_status;
}

}  // namespace

std::string connection_hint(bool tls, const boost::system::error_code& error, long verify_result) {
  if (!tls) {
    if (!plain_request_refused(error)) return "";
    return "; if the server speaks TLS (HTTPS), the URL must start with https://";
  }
  if (error.category() != asio::error::get_ssl_category() &&
      error.category() != asio::ssl::error::get_stream_category()) {
    return "";
  }
  if (mentions(error, "certificate verify failed")) {
    std::string why = verify_result == X509_V_OK
                          ? ""
                          : std::string(" (") + X509_verify_cert_error_string(verify_result) + ")";
    if (verify_result == X509_V_ERR_HOSTNAME_MISMATCH) {
      return "; the server's certificate" + why +
             " does not name the host in the URL: use a name it holds";
    }
    return "; the agent does not trust the server's certificate" + why +
           ": give the CA that signed it with --tls-ca-bundle";
  }
  if (mentions(error, "wrong version number") || mentions(error, "packet length too long")) {
    return "; the server does not answer in TLS: if it serves plain HTTP, the URL starts with "
           "http://";
  }
  return "";
}

}  // namespace dormant::heartbeat
