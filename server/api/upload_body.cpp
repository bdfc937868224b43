#include "server/api/upload_body.h"

#include <algorithm>
#include <cstdint>
#include <istream>
#include <streambuf>

#include "common/gzip.h"
#include "common/iso_time.h"
#include "profile/collapsed.h"
#include "profile/metadata_validation.h"
#include "profile/sample_plausibility.h"
#include "server/api/api_requests.h"
#include "server/api/profile_rollup.h"
#include "wire/json_fields.h"

namespace dormant::server::api {
namespace {

using boost::beast::http::status;

// Gzip data as a stream: JSON is parsed as it is inflated, without the inflated text whole. Bad
// gzip data, or more than the limit, ends the parse at once (GzipStreamBuffer::Stop): a JSON
// error would copy the whole unfinished token into its message.
class GzipStreamBuffer final : public std::streambuf {
 public:
  struct Stop {
    http::Response refusal;
  };
  GzipStreamBuffer(std::string_view compressed, size_t limit)
      : reader_(compressed, limit), limit_(limit) {}
  size_t produced() const { return reader_.produced(); }

 private:
  int_type underflow() override {
    auto got = reader_.read(buffer_, sizeof(buffer_));
    if (!got) {
      throw Stop{error_response(status::bad_request, "profile upload: " + got.error().message())};
    }
    if (reader_.past_limit()) {
      throw Stop{error_response(
          status::payload_too_large,
          "profile upload: gzip data holds more than " + std::to_string(limit_) + " bytes")};
    }
    if (*got == 0) return traits_type::eof();
    setg(buffer_, buffer_, buffer_ + *got);
    return traits_type::to_int_type(buffer_[0]);
  }

  GzipReader reader_;
  const size_t limit_;
  char buffer_[64 << 10];
};

// The JSON that gzip data inflates to, or the answer that refuses it: 413 past `limit` bytes.
std::variant<nlohmann::json, http::Response> inflate_json(std::string_view body, size_t limit) {
  GzipStreamBuffer buffer(body, limit);
  std::istream text(&buffer);
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (GzipStreamBuffer::Stop& stop) {
    return std::move(stop.refusal);
  }
  if (json.is_discarded()) {
    return error_response(status::bad_request, "profile: not valid JSON (after " +
                                                   std::to_string(buffer.produced()) +
                                                   " bytes of gzip data)");
  }
  return json;
}

// A count as the database keeps it: at most INT64_MAX.
int64_t stored_count(uint64_t count) {
  return static_cast<int64_t>(std::min(count, static_cast<uint64_t>(INT64_MAX)));
}

}  // namespace

std::variant<wire::ProfileUpload, http::Response> read_upload_body(const http::Request& request,
                                                                   size_t max_profile_bytes) {
  const std::string& body = request.body();
  bool gzipped = body.size() >= 2 && static_cast<unsigned char>(body[0]) == 0x1f &&
                 static_cast<unsigned char>(body[1]) == 0x8b;
  if (header(request, "Content-Encoding") == "gzip" && !gzipped) {
    return error_response(status::bad_request,
                          "Content-Encoding is gzip but the body is not gzip data");
  }
  nlohmann::json json;
  if (gzipped) {
    auto inflated = inflate_json(body, max_profile_bytes);
    if (auto* refusal = std::get_if<http::Response>(&inflated)) return std::move(*refusal);
    json = std::move(std::get<nlohmann::json>(inflated));
  } else {
    auto parsed = wire::parse_json_text(body, "profile");
    if (!parsed) return error_response(status::bad_request, parsed.error().message());
    json = std::move(*parsed);
  }
  std::string profile;
  if (auto field = json.find("profile"); field != json.end() && field->is_string()) {
    profile = std::move(field->get_ref<std::string&>());
  }
  auto upload = wire::parse_profile_upload(json);
  if (!upload) return error_response(status::unprocessable_entity, upload.error().message());
  upload->profile = std::move(profile);
  return std::move(*upload);
}

Result<storage::ProfileUpload> to_stored_upload(wire::ProfileUpload&& upload,
                                                std::string_view service) {
  auto start = parse_iso_time(upload.start_time);
  auto end = parse_iso_time(upload.end_time);
  if (!start) return Error::invalid_argument("start_time: not an ISO-8601 time from 1970 to 2199");
  if (!end) return Error::invalid_argument("end_time: not an ISO-8601 time from 1970 to 2199");
  if (*end < *start) return Error::invalid_argument("end_time: before start_time");
  // The first line is "# {json}" with the metadata Studio validates (docs/protocol.md).
  if (!upload.profile.starts_with('#')) {
    return Error::invalid_argument("profile: the first line must be '# ' and the JSON header");
  }
  // Every line, now: a profile stored as it came would fail each time it is drawn or merged.
  auto parsed = profile::read_collapsed(upload.profile);
  if (!parsed) return Error::invalid_argument("profile: " + parsed.error().message());
  if (auto valid = profile::validate_profile_header(parsed->header); !valid) {
    return Error::invalid_argument("profile header: " + valid.error().message());
  }
  double duration_s = std::chrono::duration<double>(*end - *start).count();
  profile::SampleCounts samples = profile::count_samples(*parsed);
  if (auto plausible = profile::check_plausible_samples(parsed->header, samples, duration_s);
      !plausible) {
    return plausible.error();
  }
  storage::ProfileUpload stored;
  stored.service_name = std::string(service);
  stored.hostname = std::move(upload.hostname);
  stored.start_time = *start;
  stored.end_time = *end;
  stored.collapsed = std::move(upload.profile);
  stored.cpu_avg = upload.cpu_avg;
  stored.mem_avg = upload.mem_avg;
  stored.instance_type = instance_type_of(parsed->header);
  stored.processors = processors_of(parsed->header);
  stored.rollup = rollup_of(*parsed, stored.hostname, stored.instance_type);
  stored.samples = stored_count(samples.total());
  stored.idle_samples = stored_count(samples.cpu_idle);
  // The CPU time its busy samples stand for, where they are clock ticks at a frequency it gives.
  if (stored.rollup.frequency_hz > 0 && profile::samples_are_clock_ticks(parsed->header)) {
    stored.cpu_seconds =
        static_cast<double>(samples.cpu_busy) / static_cast<double>(stored.rollup.frequency_hz);
  }
  return stored;
}

}  // namespace dormant::server::api
