// A transport that answers from a script, on the io_context as the real one does: what the
// heartbeat loop and the retrying sender are tested against.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "heartbeat/https_client.h"

namespace dormant::heartbeat {

class ScriptedClient : public HttpsClient {
 public:
  // What a post answers once the script is spent.
  ScriptedClient(boost::asio::io_context& io, HttpReply when_spent)
      : io_(io), when_spent_(std::move(when_spent)) {}

  using HttpsClient::post;
  void post(Post request, Callback done) override {
    paths.push_back(request.path);
    bodies.push_back(std::move(request.body));
    Result<HttpReply> next =
        script.empty() ? Result<HttpReply>(when_spent_) : std::move(script.front());
    if (!script.empty()) script.pop_front();
    boost::asio::post(
        io_, [done = std::move(done), next = std::move(next)]() mutable { done(std::move(next)); });
  }
  void cancel() override { ++cancels; }
  void on_idle_close(std::function<void()>) override {}
  void reconfigure(std::shared_ptr<boost::asio::ssl::context>, Headers) override {}

  std::deque<Result<HttpReply>> script;
  std::vector<std::string> paths;
  std::vector<std::string> bodies;
  int cancels = 0;

 private:
  boost::asio::io_context& io_;
  HttpReply when_spent_;
};

}  // namespace dormant::heartbeat
