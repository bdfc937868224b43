// The body of a profile upload, compressed once and cut to what Performance Studio takes.
#pragma once

#include <chrono>
#include <string>

#include "common/result.h"
#include "module/api/profiler_module.h"
#include "wire/compressed_upload.h"

namespace dormant::agent {

// Performance Studio refuses a compressed body above 4 MiB; the rest is room for the gpid.
inline constexpr size_t kMaxUploadBytes = (4 << 20) - 4096;

// The upload body (gpid left for the uploader) for a profile that fits in `max_bytes`: when it
// does not, the stacks with the fewest samples are dropped, and the header's "truncated" object
// says how many stacks and samples went.
struct UploadBody {
  wire::CompressedUpload upload;
  size_t dropped_stacks = 0;
};
Result<UploadBody> make_upload_body(const module::Snapshot& snapshot, const std::string& hostname,
                                    std::chrono::system_clock::time_point start,
                                    const module::SnapshotTimes& times,
                                    size_t max_bytes = kMaxUploadBytes);

}  // namespace dormant::agent
