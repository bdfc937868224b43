// A Beast body of one owned string followed by shared ones, sent without being joined: a large
// part that every request repeats (the heartbeat's containers[]) is neither copied nor allocated
// again for each request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional.hpp>

namespace dormant::heartbeat {

struct SharedPartsBody {
  struct value_type {
    std::string own;
    std::vector<std::shared_ptr<const std::string>> shared;  // after `own`, in order
  };

  static std::uint64_t size(const value_type& body) {
    std::uint64_t bytes = body.own.size();
    for (const auto& part : body.shared) bytes += part ? part->size() : 0;
    return bytes;
  }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool isRequest, class Fields>
    writer(const boost::beast::http::header<isRequest, Fields>&, const value_type& body)
        : body_(body) {}

    void init(boost::beast::error_code& error) { error = {}; }

    // One part at a time, the empty ones skipped.
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& error) {
      error = {};
      while (next_ <= body_.shared.size()) {
        const std::string* part = next_ == 0 ? &body_.own : body_.shared[next_ - 1].get();
        ++next_;
        if (part == nullptr || part->empty()) continue;
        return std::make_pair(const_buffers_type(part->data(), part->size()),
                              next_ <= body_.shared.size());
      }
      return boost::none;
    }

   private:
    const value_type& body_;
    size_t next_ = 0;  // 0: `own`; i: shared[i - 1]
  };
};

}  // namespace dormant::heartbeat
