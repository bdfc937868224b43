// A profile upload compressed once, when the profile is made. Its body's last key, "gpid", takes
// the id the server gave the previous upload, known only at send time: the head (a gzip member
// holding the JSON up to that key) is kept, and sending adds a second member with the value and
// the closing brace. RFC 1952 makes a series of members decompress to their concatenation
// (gunzip, Python's gzip and Go's gzip.Reader all read it so).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "wire/protocol.h"

namespace dormant::wire {

struct CompressedUpload {
  std::string end_time;   // the upload's "timestamp" query parameter
  std::string gzip_head;  // the body's JSON up to `"gpid":`, gzip'd

  friend bool operator==(const CompressedUpload&, const CompressedUpload&) = default;
};

// `upload.gpid` is left out: the body gets it when it is sent.
Result<CompressedUpload> compress_upload(const ProfileUpload& upload);

// What the gpid's member adds to the head, at most.
inline constexpr size_t kGpidMemberBytes = 64;

// The whole gzip body: the head, then `gpid` (or "" before the first answer) and "}".
Result<std::string> body_with_gpid(const CompressedUpload& upload, std::optional<int64_t> gpid);

}  // namespace dormant::wire
