// Profile rollups: every stored profile is also added, in the transaction that stores it, into
// aggregates by service and time bucket (a minute, an hour, a day), once for the whole service
// and once per label key (host, container, instance type), so that a view over a range reads
// buckets, not profiles. A bucket holds each distinct stack's samples under the stack's id; the
// stack's text is kept once per service (rollup_rows.h).
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dormant::server::storage {

using RollupTime = std::chrono::system_clock::time_point;

// A stack's id: the first 8 bytes of the SHA-256 of its text ("comm;frame;…;frame", root first,
// without its container), never 0. The same on every replica and after every restart.
using StackId = uint64_t;
// The id the samples of stacks past a bucket's or a view's cap are counted under.
inline constexpr StackId kStacksPastCap = 0;

struct StackCount {
  StackId id = 0;
  uint64_t count = 0;
  friend bool operator==(const StackCount&, const StackCount&) = default;
};

// What a view filters on. Each profile's stacks are kept per container, so a container is a key
// of its own.
struct LabelKey {
  std::string hostname;
  std::string container;  // "" for processes outside containers
  std::string instance_type;
  friend auto operator<=>(const LabelKey&, const LabelKey&) = default;
};

struct RollupPart {
  LabelKey key;
  std::vector<StackCount> stacks;  // by id, each once
};

// One profile as its rollups take it.
struct ProfileRollup {
  std::vector<RollupPart> parts;  // one per container the profile has stacks of
  std::vector<StackCount> whole;  // the parts' stacks summed, by id
  std::vector<std::pair<StackId, std::string>> texts;  // each id's text, by id
  uint64_t frequency_hz = 0;                           // 0: the header gives none
};

// A bucket's width, in seconds.
enum class Resolution : int64_t { kMinute = 60, kHour = 3600, kDay = 86400 };

inline int64_t width_ms(Resolution resolution) { return static_cast<int64_t>(resolution) * 1000; }

inline constexpr Resolution kResolutions[] = {Resolution::kMinute, Resolution::kHour,
                                              Resolution::kDay};

// How far a service's hour and day buckets are whole. Uploads add to minute buckets; an hour is
// compacted from its minutes once it is over, a day from its hours (rollups.h), and a late upload
// into a compacted hour or day is added to it as well as to its minute. A bucket that starts
// before its size's `before` holds every profile of its time; later ones are read as finer
// buckets. INT64_MAX: every bucket is whole; INT64_MIN: none is.
struct Compacted {
  int64_t hours_before_ms = INT64_MAX;
  int64_t days_before_ms = INT64_MAX;
  int64_t before(Resolution resolution) const {
    return resolution == Resolution::kHour  ? hours_before_ms
           : resolution == Resolution::kDay ? days_before_ms
                                            : INT64_MAX;
  }
};

// How long each bucket size is kept; zero: for ever. Finer buckets are kept no longer than
// coarser ones (validated with the server's flags).
struct RollupRetention {
  std::chrono::hours minute{0};
  std::chrono::hours hour{0};
  std::chrono::hours day{0};
  std::chrono::hours of(Resolution resolution) const;
};

// Performance Studio's filter: rules on labels, all of which (or any of which) must hold. A
// Kubernetes container's pod and namespace are read from its name (kubernetes_names), as its
// deployment is; other containers have none.
enum class Label {
  kHostName,
  kContainerName,
  kContainerEnvName,
  kInstanceType,
  kPodName,
  kNamespace,
};

struct LabelRule {
  Label label = Label::kHostName;
  bool equal = true;  // $eq; false: $neq
  std::string value;
};

struct LabelFilter {
  bool any = false;  // $or; false: $and
  std::vector<LabelRule> rules;

  bool matches(const LabelKey& key) const;
  // The one host every matching key has, where the rules require it ($and with a HostName $eq).
  std::optional<std::string> required_host() const;
};

// A label's value for a key ("" where the key has none).
std::string label_value(const LabelKey& key, Label label);
// The label as people say it: "host", "container", "deployment", "instance type", …
std::string_view label_name(Label label);

struct KubernetesNames {
  std::string_view namespace_name;
  std::string_view pod;
};
// The pod and namespace a container's name gives: ours, "<namespace>/<pod>/<container>";
// dockershim's, "k8s_<container>_<pod>_<namespace>_<uid>_<restarts>"; Studio's agents',
// "<container>_<pod>_<namespace>". None for any other name.
std::optional<KubernetesNames> kubernetes_names(std::string_view container);

// Kubernetes' "<container>_<pod>_<namespace>" as Studio's "Deployment": the pod's name without
// its ReplicaSet and pod hashes, then "_<namespace>"; any other name as it is.
std::string container_env_name(std::string_view container);

struct RollupQuery {
  std::string service;
  // The range; read in the whole minutes it touches: [from, to) widened to minutes.
  RollupTime from;
  RollupTime to;
  std::optional<LabelFilter> filter;  // none: every key
  size_t max_stacks = 1 << 20;        // distinct stacks kept; the rest counted under one
};

// A range of buckets of one size: [first_ms, end_ms) by their starts.
struct BucketRange {
  Resolution resolution = Resolution::kMinute;
  int64_t first_ms = 0;
  int64_t end_ms = 0;
  friend bool operator==(const BucketRange&, const BucketRange&) = default;
};

struct RollupView {
  std::vector<StackCount> stacks;                      // by id
  std::vector<std::pair<StackId, std::string>> texts;  // by id; a stack whose text is gone, none
  RollupTime from;                                     // the range read, widened
  RollupTime to;
  int64_t buckets = 0;  // buckets that held data
  // Profiles merged; known for a whole service's buckets only (label buckets split a profile).
  std::optional<int64_t> profiles;
  std::set<std::string> hosts;
  std::optional<RollupTime> first_start;
  std::optional<RollupTime> last_end;
  uint64_t frequency_hz = 0;  // every bucket's, or 0 where they differ
};

}  // namespace dormant::server::storage
