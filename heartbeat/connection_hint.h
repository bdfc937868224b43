// What to check when a connection to the server fails the way a configuration mistake makes it
// fail: an http:// URL to a TLS server, an https:// URL to a plain one, a certificate the agent
// has no CA for.
#pragma once

#include <string>

#include <boost/system/error_code.hpp>

namespace dormant::heartbeat {

// "" when `error` says nothing of the agent's configuration; else the text to add after it,
// starting with "; ". `tls`: whether the URL is https://; `verify_result`: OpenSSL's
// SSL_get_verify_result for the connection (X509_V_OK without TLS).
std::string connection_hint(bool tls, const boost::system::error_code& error, long verify_result);

}  // namespace dormant::heartbeat
