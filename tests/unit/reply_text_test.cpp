#include "heartbeat/reply_text.h"

#include <gtest/gtest.h>

namespace dormant::heartbeat {
namespace {

// Issue 43: the 401's message was cut mid-word at 200 bytes of JSON; it is the server's text,
// whole.
TEST(ReplyText, TheServersMessageIsWholeWithWhatToCheck) {
  std::string message(300, 'm');
  std::string text = describe_reply({401, R"({"message":")" + message + R"("})"});
  EXPECT_EQ(text.find("the server answered HTTP 401: " + message + "; "), 0u) << text;
  EXPECT_NE(text.find("check --token-file"), std::string::npos) << text;
}

TEST(ReplyText, StudiosDetailIsReadAndEachStatusGetsItsHint) {
  EXPECT_EQ(describe_reply({403, R"({"detail":"Not authenticated"})"}),
            "the server answered HTTP 403: Not authenticated; the server knows the token, but "
            "its role may not do this: the agent needs a token of the agent role");
  EXPECT_NE(describe_reply({404, "{}"}).find("check the path in --api-server"), std::string::npos);
  EXPECT_EQ(describe_reply({503, ""}), "the server answered HTTP 503");
}

// A hostile or broken server: its text reaches the log bounded and without control bytes.
TEST(ReplyText, AHostileBodyIsBoundedAndDefused) {
  std::string huge(1 << 20, 'x');
  std::string text = describe_reply({500, R"({"message":")" + huge + R"("})"});
  EXPECT_LT(text.size(), kMaxReplyMessageBytes + 200);
  EXPECT_NE(text.find("(1048576 bytes)"), std::string::npos) << text.substr(text.size() - 100);

  std::string escapes = describe_reply({500, R"({"message":"a\u001b[31mb\nc"})"});
  EXPECT_EQ(escapes, "the server answered HTTP 500: a [31mb c");

  std::string deep(10'000, '[');
  std::string excerpt = describe_reply({500, deep});
  EXPECT_LT(excerpt.size(), 200u);
  EXPECT_EQ(describe_reply({502, "<html>bad gateway</html>"}),
            "the server answered HTTP 502: '<html>bad gateway</html>'");
}

}  // namespace
}  // namespace dormant::heartbeat
