// HTTP Basic as browsers send it, and the requests another site's page could make a browser send.
#include "server/api/browser_guard.h"

#include <gtest/gtest.h>

namespace dormant::server::api {
namespace {

namespace bhttp = boost::beast::http;

http::RequestHeader request(bhttp::verb method,
                            std::vector<std::pair<std::string, std::string>> headers) {
  http::RequestHeader header;
  header.method(method);
  header.target("/api/v1/filters");
  header.set(bhttp::field::host, "studio.example:8443");
  for (const auto& [name, value] : headers) header.set(name, value);
  return header;
}

TEST(BasicPassword, IsWhatFollowsTheFirstColon) {
  // "ui:tok:en" and "user:" in base64.
  EXPECT_EQ(basic_password("Basic dWk6dG9rOmVu"), "tok:en");
  EXPECT_EQ(basic_password("basic dXNlcjo="), "");
  EXPECT_EQ(basic_password("Basic OnNlY3JldA=="), "secret");  // no user name
}

TEST(BasicPassword, RefusesWhatIsNotBasicOrDoesNotDecode) {
  EXPECT_EQ(basic_password("Bearer dWk6dG9rZW4="), std::nullopt);
  EXPECT_EQ(basic_password("Basic"), std::nullopt);
  EXPECT_EQ(basic_password("Basic "), std::nullopt);
  EXPECT_EQ(basic_password("Basic dWk"), std::nullopt);       // not a multiple of 4
  EXPECT_EQ(basic_password("Basic ****"), std::nullopt);      // not base64
  EXPECT_EQ(basic_password("Basic dXNlcg=="), std::nullopt);  // "user": no colon
  EXPECT_EQ(basic_password("Basic " + std::string(8192, 'A')), std::nullopt);  // too long
  // '=' is padding at the end, at most twice: never a length below zero.
  for (const char* padded :
       {"Basic ====", "Basic A=======", "Basic dWk6dG9=rZW4=", "Basic A===", "Basic =dWk"}) {
    EXPECT_EQ(basic_password(padded), std::nullopt) << padded;
  }
}

TEST(CrossSiteRefusal, LetsReadsAndSameOriginChangesThrough) {
  EXPECT_FALSE(
      cross_site_refusal(request(bhttp::verb::get, {{"Sec-Fetch-Site", "cross-site"}}), true));
  EXPECT_FALSE(
      cross_site_refusal(request(bhttp::verb::post, {{"Origin", "https://studio.example:8443"},
                                                     {"Sec-Fetch-Site", "same-origin"},
                                                     {"Content-Type", "application/json"}}),
                         true));
  // Agents and scripts send neither header.
  EXPECT_FALSE(cross_site_refusal(request(bhttp::verb::post, {}), false));
  EXPECT_FALSE(cross_site_refusal(request(bhttp::verb::delete_, {}), true));
}

TEST(CrossSiteRefusal, RefusesChangesFromOtherSites) {
  for (const char* site : {"cross-site", "same-site", "Cross-Site"}) {
    EXPECT_TRUE(
        cross_site_refusal(request(bhttp::verb::delete_, {{"Sec-Fetch-Site", site}}), false))
        << site;
  }
  EXPECT_TRUE(cross_site_refusal(
      request(bhttp::verb::put, {{"Origin", "https://studio.example:9443"}}), false));
  EXPECT_TRUE(cross_site_refusal(request(bhttp::verb::post, {{"Origin", "null"}}), false));
  // With Basic, only JSON: a form's text/plain or urlencoded needs no preflight.
  EXPECT_TRUE(cross_site_refusal(
      request(bhttp::verb::post, {{"Content-Type", "application/x-www-form-urlencoded"}}), true));
  EXPECT_TRUE(cross_site_refusal(request(bhttp::verb::put, {}), true));
  EXPECT_TRUE(cross_site_refusal(request(bhttp::verb::post, {{"Sec-Fetch-Site", "same-origin"},
                                                             {"Content-Type", "text/plain"}}),
                                 false));
}

TEST(CrossSiteRefusal, TakesTheBrowsersHostFromAProxy) {
  auto proxied = [](std::string forwarded) {
    return request(bhttp::verb::post, {{"Origin", "https://ui.example"},
                                       {"X-Forwarded-Host", std::move(forwarded)},
                                       {"Content-Type", "application/json"}});
  };
  EXPECT_FALSE(cross_site_refusal(proxied("ui.example"), true));
  EXPECT_TRUE(cross_site_refusal(proxied("other.example"), true));
}

}  // namespace
}  // namespace dormant::server::api
