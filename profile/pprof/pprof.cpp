#include "profile/pprof/pprof.h"

#include <string_view>
#include <unordered_map>
#include <vector>

#include "pprof/profile.pb.h"  // generated from profile.proto

#include "common/gzip.h"

namespace dormant::profile {
namespace {

namespace proto = perftools::profiles;

class StringTable {
 public:
  explicit StringTable(proto::Profile& profile) : profile_(profile) { index(""); }

  int64_t index(std::string_view text) {
    auto [found, added] = indexes_.try_emplace(std::string(text), indexes_.size());
    if (added) profile_.add_string_table(found->first);
    return static_cast<int64_t>(found->second);
  }

 private:
  proto::Profile& profile_;
  std::unordered_map<std::string, size_t> indexes_;
};

void set_value_type(proto::ValueType* type, StringTable& strings, std::string_view name,
                    std::string_view unit) {
  type->set_type(strings.index(name));
  type->set_unit(strings.index(unit));
}

void add_label(proto::Sample* sample, int64_t key, int64_t value) {
  proto::Label* label = sample->add_label();
  label->set_key(key);
  label->set_str(value);
}

}  // namespace

Result<std::string> write_pprof(const StackTable& table, const PprofOptions& options) {
  proto::Profile profile;
  StringTable strings(profile);
  set_value_type(profile.add_sample_type(), strings, "samples", "count");
  if (options.frequency_hz > 0) {
    set_value_type(profile.mutable_period_type(), strings, "cpu", "nanoseconds");
    profile.set_period(static_cast<int64_t>(1'000'000'000 / options.frequency_hz));
  }
  profile.set_time_nanos(options.time_nanos);
  profile.set_duration_nanos(options.duration_nanos);
  const int64_t container_key = strings.index("container");
  const int64_t comm_key = strings.index("comm");

  // Location and Function ids by the table's string id: one of each per distinct frame.
  std::vector<uint64_t> location_ids;
  auto location_of = [&](StringId frame) {
    if (frame >= location_ids.size()) location_ids.resize(frame + 1, 0);
    if (location_ids[frame] == 0) {
      const uint64_t id = static_cast<uint64_t>(profile.location_size()) + 1;
      proto::Function* function = profile.add_function();
      function->set_id(id);
      function->set_name(strings.index(table.string(frame)));
      function->set_system_name(function->name());
      proto::Location* location = profile.add_location();
      location->set_id(id);
      location->add_line()->set_function_id(id);
      location_ids[frame] = id;
    }
    return location_ids[frame];
  };

  table.for_each([&](const StackView& stack) {
    proto::Sample* sample = profile.add_sample();
    for (auto frame = stack.frame_ids.rbegin(); frame != stack.frame_ids.rend(); ++frame) {
      sample->add_location_id(location_of(*frame));
    }
    sample->add_value(static_cast<int64_t>(stack.count));
    if (!stack.container.empty()) add_label(sample, container_key, strings.index(stack.container));
    add_label(sample, comm_key, strings.index(stack.comm));
  });

  std::string bytes;
  if (!profile.SerializeToString(&bytes)) {
    return Error::invalid_argument("pprof: the profile is too large to serialize");
  }
  return gzip_compress(bytes);
}

}  // namespace dormant::profile
