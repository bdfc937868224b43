// Why a merge found nothing, in words for its answer: a flamegraph of nothing looks like a
// flamegraph of an idle service, so an empty merge is answered with the reason instead: a
// service no agent ever spoke for (and the services there are), or a range that misses the
// service's profiles (and where they are).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "server/api/profile_merge.h"
#include "server/storage/store.h"

namespace dormant::server::api {

// True when `merged` holds no sample at all, idle ones included.
bool merged_nothing(const MergedProfile& merged);

// The reason `selection` merged nothing; `side` names the range ("the baseline") or is empty.
Result<std::string> why_nothing_merged(storage::Store& store, const MergeSelection& selection,
                                       std::string_view side);

// The error for two ranges of a diff that share time, or nullopt-like "" when they do not: a
// profile in both would count on both sides.
std::string overlap_error(storage::TimePoint since, storage::TimePoint until,
                          storage::TimePoint baseline_since, storage::TimePoint baseline_until);

}  // namespace dormant::server::api
