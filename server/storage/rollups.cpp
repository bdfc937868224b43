#include "server/storage/rollups.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "server/storage/rollup_blob.h"
#include "server/storage/rollup_rows.h"

namespace dormant::server::storage {
namespace {

// Makes other servers' uploads of the service wait until this transaction ends: a bucket is read,
// added to and written whole. SQLite's write transactions already exclude each other.
Result<void> lock_service_rollups(Database& db, const std::string& service) {
  if (db.dialect() == Dialect::kSqlite) return ok();
  auto lock = db.prepare("SELECT pg_advisory_xact_lock(hashtextextended(?1, 1))");
  if (!lock) return std::move(lock).take_error();
  return lock->bind_all("rollups\n" + service).run();
}

// A view's sums, at most `max_stacks` distinct stacks; the samples of the others under
// kStacksPastCap.
class StackSums {
 public:
  explicit StackSums(size_t max_stacks) : max_stacks_(max_stacks) {}

  Result<void> add(std::string_view blob) {
    auto stacks = decode_stacks(blob);
    if (!stacks) return std::move(stacks).take_error();
    for (const StackCount& stack : *stacks) {
      auto found = sums_.find(stack.id);
      if (found != sums_.end()) {
        found->second += stack.count;
      } else if (stack.id != kStacksPastCap && sums_.size() >= max_stacks_) {
        past_cap_ += stack.count;
      } else {
        sums_.emplace(stack.id, stack.count);
      }
    }
    return {};
  }

  std::vector<StackCount> sorted() const {
    std::vector<StackCount> out;
    out.reserve(sums_.size() + 1);
    for (const auto& [id, count] : sums_) {
      if (id != kStacksPastCap) out.push_back({id, count});
    }
    std::sort(out.begin(), out.end(),
              [](const StackCount& a, const StackCount& b) { return a.id < b.id; });
    uint64_t past_cap = past_cap_;
    if (auto held = sums_.find(kStacksPastCap); held != sums_.end()) past_cap += held->second;
    if (past_cap > 0) out.insert(out.begin(), {kStacksPastCap, past_cap});
    return out;
  }

 private:
  const size_t max_stacks_;
  std::unordered_map<StackId, uint64_t> sums_;
  uint64_t past_cap_ = 0;
};

Resolution finer(Resolution resolution) {
  return resolution == Resolution::kDay ? Resolution::kHour : Resolution::kMinute;
}

// Buckets summed into one: their stacks (capped) and their totals.
struct SummedBuckets {
  explicit SummedBuckets(size_t max_stacks) : sums(max_stacks) {}

  // An unreadable bucket (damaged on disk) is left out, and said: it must not hold up the rest.
  void add(const std::string& service, const BucketRow& row) {
    if (auto added = sums.add(row.stacks); !added) {
      spdlog::error("compacting the rollups of {}: the bucket at {} is unreadable ({}); left out",
                    service, row.bucket_ms, added.error().message());
      return;
    }
    if (totals) {
      totals->add(row.totals);
    } else {
      totals = row.totals;
    }
  }

  StackSums sums;
  std::optional<BucketTotals> totals;  // none until a bucket is added
};

// Writes the bucket of `coarse` at `start_ms` from the finer buckets it holds, for the service
// and for each label key, replacing what it held.
Result<void> compact_bucket(Database& db, const std::string& service, Resolution coarse,
                            int64_t start_ms, size_t max_stacks) {
  // An hour's finer buckets per read: PostgreSQL hands a result over whole, and a day's label
  // buckets of a large service are many.
  std::vector<BucketRange> ranges;
  for (int64_t at = start_ms; at < start_ms + width_ms(coarse); at += width_ms(Resolution::kHour)) {
    ranges.push_back({finer(coarse), at, at + width_ms(Resolution::kHour)});
  }
  SummedBuckets whole(max_stacks);
  std::map<LabelKey, SummedBuckets> by_key;
  auto add_whole = [&](const BucketRow& row) -> Result<void> {
    whole.add(service, row);
    return {};
  };
  auto add_labelled = [&](const BucketRow& row) -> Result<void> {
    by_key.try_emplace(*row.label, max_stacks).first->second.add(service, row);
    return {};
  };
  if (auto read = read_buckets(db, service, ranges, false, std::nullopt, add_whole); !read) {
    return read;
  }
  if (auto read = read_buckets(db, service, ranges, true, std::nullopt, add_labelled); !read) {
    return read;
  }
  if (whole.totals) {
    BucketKey key{service, coarse, start_ms};
    if (auto put = put_bucket(db, key, whole.sums.sorted(), *whole.totals); !put) return put;
  }
  for (const auto& [label, summed] : by_key) {
    if (!summed.totals) continue;
    BucketKey key{service, coarse, start_ms, &label};
    if (auto put = put_bucket(db, key, summed.sums.sorted(), *summed.totals); !put) return put;
  }
  return {};
}

}  // namespace

Result<void> roll_up_profile(Database& db, const std::string& service, TimePoint start,
                             TimePoint end, const ProfileRollup& rollup,
                             std::span<const std::pair<StackId, std::string>> new_texts,
                             size_t max_stacks) {
  if (auto locked = lock_service_rollups(db, service); !locked) return locked;
  int64_t start_ms = to_unix_ms(start);
  int64_t end_ms = to_unix_ms(end);
  if (auto kept =
          remember_stack_texts(db, service, bucket_start(start_ms, Resolution::kDay), new_texts);
      !kept) {
    return kept;
  }
  auto compacted = read_compacted(db, service);
  if (!compacted) return std::move(compacted).take_error();
  for (Resolution resolution : kResolutions) {
    BucketKey key{service, resolution, bucket_start(start_ms, resolution)};
    // An hour or a day still open is compacted from its minutes later.
    if (key.bucket_ms >= compacted->before(resolution)) continue;
    if (auto added =
            add_to_bucket(db, key, rollup.whole, start_ms, end_ms, rollup.frequency_hz, max_stacks);
        !added) {
      return added;
    }
    for (const RollupPart& part : rollup.parts) {
      key.label = &part.key;
      if (auto added = add_to_bucket(db, key, part.stacks, start_ms, end_ms, rollup.frequency_hz,
                                     max_stacks);
          !added) {
        return added;
      }
    }
  }
  return {};
}

Result<RollupView> read_rollup(Database& db, const RollupQuery& query, const BucketPlan& plan) {
  RollupView view;
  view.from = from_unix_ms(plan.from_ms);
  view.to = from_unix_ms(plan.to_ms);
  bool by_label = query.filter && !query.filter->rules.empty();
  StackSums sums(query.max_stacks);
  std::set<std::pair<Resolution, int64_t>> buckets;
  std::optional<int64_t> frequency;
  int64_t first_start_ms = INT64_MAX;
  int64_t last_end_ms = INT64_MIN;
  if (!by_label) view.profiles = 0;
  auto visit = [&](const BucketRow& row) -> Result<void> {
    if (by_label) {
      if (!query.filter->matches(*row.label)) return {};
      view.hosts.insert(row.label->hostname);
    } else {
      *view.profiles += row.totals.profiles;
    }
    if (auto added = sums.add(row.stacks); !added) {
      return std::move(added).take_error().with_context("reading a rollup bucket of " +
                                                        query.service);
    }
    buckets.emplace(row.resolution, row.bucket_ms);
    first_start_ms = std::min(first_start_ms, row.totals.first_start_ms);
    last_end_ms = std::max(last_end_ms, row.totals.last_end_ms);
    if (!frequency) {
      frequency = row.totals.frequency_hz;
    } else if (*frequency != row.totals.frequency_hz) {
      frequency = 0;
    }
    return {};
  };
  auto host = by_label ? query.filter->required_host() : std::nullopt;
  if (auto read = read_buckets(db, query.service, plan.ranges, by_label, host, visit); !read) {
    return std::move(read).take_error();
  }
  if (!by_label && !buckets.empty()) {
    auto hosts = read_bucket_hosts(db, query.service, plan.ranges);
    if (!hosts) return std::move(hosts).take_error();
    view.hosts = std::move(*hosts);
  }
  view.buckets = static_cast<int64_t>(buckets.size());
  view.frequency_hz = static_cast<uint64_t>(std::max<int64_t>(0, frequency.value_or(0)));
  if (first_start_ms <= last_end_ms) {
    view.first_start = from_unix_ms(first_start_ms);
    view.last_end = from_unix_ms(last_end_ms);
  }
  view.stacks = sums.sorted();
  return view;
}

Result<std::optional<std::pair<int64_t, int64_t>>> read_data_span(
    Database& db, const std::string& service, const std::optional<LabelFilter>& filter,
    const BucketPlan& plan) {
  bool by_label = filter && !filter->rules.empty();
  int64_t first = INT64_MAX;
  int64_t last = INT64_MIN;
  auto visit = [&](const BucketRow& row) -> Result<void> {
    if (by_label && !filter->matches(*row.label)) return {};
    first = std::min(first, row.totals.first_start_ms);
    last = std::max(last, row.totals.last_end_ms);
    return {};
  };
  auto host = by_label ? filter->required_host() : std::nullopt;
  if (auto read = read_buckets(db, service, plan.ranges, by_label, host, visit, false); !read) {
    return std::move(read).take_error();
  }
  if (first > last) return std::optional<std::pair<int64_t, int64_t>>();
  return std::optional<std::pair<int64_t, int64_t>>(std::pair{first, last});
}

Result<std::vector<RollupSlot>> read_rollup_slots(Database& db, const RollupQuery& query,
                                                  Resolution resolution, int64_t slot_ms,
                                                  const Compacted& compacted,
                                                  const StackClasses* classes) {
  const int64_t width = width_ms(resolution);
  slot_ms = std::max(width, slot_ms - slot_ms % width);
  const int64_t from_ms = bucket_start(to_unix_ms(query.from), resolution);
  const int64_t to_ms = to_unix_ms(query.to);
  if (to_ms <= from_ms) return std::vector<RollupSlot>();
  // Whole buckets of `resolution`, then finer ones where it is not compacted yet.
  std::vector<BucketRange> ranges;
  int64_t at = from_ms;
  for (Resolution size = resolution;; size = finer(size)) {
    int64_t end = std::min(to_ms, compacted.before(size));
    if (end > at) {
      ranges.push_back({size, at, end});
      at = end;
    }
    if (size == Resolution::kMinute || at >= to_ms) break;
  }
  bool by_label = query.filter && !query.filter->rules.empty();
  std::map<int64_t, RollupSlot> slots;
  auto visit = [&](const BucketRow& row) -> Result<void> {
    if (by_label && !query.filter->matches(*row.label)) return {};
    int64_t start = row.bucket_ms - ((row.bucket_ms % slot_ms) + slot_ms) % slot_ms;
    RollupSlot& slot = slots.try_emplace(start, RollupSlot{start}).first->second;
    slot.samples += row.totals.samples;
    if (classes == nullptr) return {};
    auto stacks = decode_stacks(row.stacks);
    if (!stacks) return std::move(stacks).take_error();
    for (const StackCount& stack : *stacks) {
      auto found = classes->find(stack.id);
      if (found == classes->end()) continue;
      (found->second == StackClass::kPicked ? slot.picked : slot.left_out) += stack.count;
    }
    return {};
  };
  auto host = by_label ? query.filter->required_host() : std::nullopt;
  if (auto read =
          read_buckets(db, query.service, ranges, by_label, host, visit, classes != nullptr);
      !read) {
    return std::move(read).take_error().with_context("reading the rollups of " + query.service);
  }
  std::vector<RollupSlot> series;
  series.reserve(slots.size());
  for (const auto& held : slots) series.push_back(held.second);
  return series;
}

Result<std::map<LabelKey, int64_t>> read_label_samples(Database& db, const std::string& service,
                                                       const BucketPlan& plan) {
  std::map<LabelKey, int64_t> samples;
  auto visit = [&](const BucketRow& row) -> Result<void> {
    samples[*row.label] += row.totals.samples;
    return {};
  };
  if (auto read = read_buckets(db, service, plan.ranges, true, std::nullopt, visit, false); !read) {
    return std::move(read).take_error();
  }
  return samples;
}

Result<bool> compact_next_bucket(Database& db, const std::string& service, int64_t now_ms,
                                 size_t max_stacks) {
  return in_write_transaction(db, [&]() -> Result<bool> {
    if (auto locked = lock_service_rollups(db, service); !locked) {
      return std::move(locked).take_error();
    }
    auto compacted = read_compacted(db, service);
    if (!compacted) return std::move(compacted).take_error();
    const int64_t settled = now_ms - kCompactionGraceMs;
    int64_t hours_before = compacted->hours_before_ms;
    auto next = next_minute_bucket(db, service, hours_before);
    if (!next) return std::move(next).take_error();
    if (hours_before == INT64_MIN && !*next) return false;  // no minutes: nothing to compact
    // Hours without minutes (a quiet spell) are skipped, up to the next that has some.
    int64_t quiet_until = bucket_start(*next ? **next : settled, Resolution::kHour);
    if (hours_before == INT64_MIN || quiet_until > hours_before) hours_before = quiet_until;
    int64_t days_before = compacted->days_before_ms;
    if (days_before == INT64_MIN && hours_before != INT64_MIN) {
      days_before = bucket_start(hours_before, Resolution::kDay);
    }
    if (hours_before != INT64_MIN && hours_before + width_ms(Resolution::kHour) <= settled) {
      if (auto made = compact_bucket(db, service, Resolution::kHour, hours_before, max_stacks);
          !made) {
        return std::move(made).take_error();
      }
      for (auto [size, before] :
           {std::pair{Resolution::kHour, hours_before + width_ms(Resolution::kHour)},
            {Resolution::kDay, days_before}}) {
        if (auto noted = write_compacted(db, service, size, before); !noted) {
          return std::move(noted).take_error();
        }
      }
      return true;
    }
    if (days_before != INT64_MIN && days_before + width_ms(Resolution::kDay) <= settled &&
        days_before + width_ms(Resolution::kDay) <= hours_before) {
      if (auto made = compact_bucket(db, service, Resolution::kDay, days_before, max_stacks);
          !made) {
        return std::move(made).take_error();
      }
      if (auto noted = write_compacted(db, service, Resolution::kDay,
                                       days_before + width_ms(Resolution::kDay));
          !noted) {
        return std::move(noted).take_error();
      }
      return true;
    }
    return false;
  });
}

Result<void> mark_rollups_compacted(Database& db) {
  auto services = services_with_rollups(db, std::nullopt);
  if (!services) return std::move(services).take_error();
  const int64_t now_ms = to_unix_ms(std::chrono::system_clock::now());
  for (const std::string& service : *services) {
    for (Resolution size : {Resolution::kHour, Resolution::kDay}) {
      if (auto noted = write_compacted(db, service, size, bucket_start(now_ms, size)); !noted) {
        return noted;
      }
    }
  }
  return {};
}

Result<int64_t> expire_rollups(Database& db, const RollupRetention& retention, int64_t now_ms,
                               int64_t batch) {
  auto cutoff = [&](Resolution resolution) {
    return now_ms -
           std::chrono::duration_cast<std::chrono::milliseconds>(retention.of(resolution)).count();
  };
  int64_t deleted = 0;
  for (Resolution resolution : kResolutions) {
    if (retention.of(resolution).count() == 0) continue;
    auto removed = in_write_transaction(
        db, [&] { return delete_buckets_before(db, resolution, cutoff(resolution), batch); });
    if (!removed) return removed;
    deleted += *removed;
  }
  if (retention.day.count() > 0) {
    // A text is held by the day buckets up to its last day: gone once that day is.
    int64_t day = bucket_start(cutoff(Resolution::kDay), Resolution::kDay);
    auto removed =
        in_write_transaction(db, [&] { return delete_stack_texts_before(db, day, batch); });
    if (!removed) return removed;
    deleted += *removed;
  }
  return deleted;
}

}  // namespace dormant::server::storage
