#include "server/api/studio_series.h"

#include <algorithm>

#include "profile/idle_stacks.h"

namespace dormant::server::api {

Result<std::vector<SlotSamples>> studio_series(storage::Store& store,
                                               const MergeSelection& selection, int64_t slot_ms,
                                               std::string_view function) {
  const storage::RollupQuery query = rollup_query(selection);
  auto view = store.read_rollup(query);
  if (!view) return std::move(view).take_error();
  storage::StackClasses classes;
  std::vector<std::string_view> frames;
  for (const auto& [id, text] : view->texts) {
    std::string_view comm = split_stack_text(text, frames);
    if (profile::is_idle_stack(comm, frames)) {
      classes.emplace(id, storage::StackClass::kLeftOut);
    } else if (!function.empty() &&
               std::find(frames.begin(), frames.end(), function) != frames.end()) {
      classes.emplace(id, storage::StackClass::kPicked);
    }
  }
  view->texts.clear();
  auto slots = store.read_rollup_slots(query, slot_ms, &classes);
  if (!slots) return std::move(slots).take_error();
  std::vector<SlotSamples> series;
  series.reserve(slots->size());
  for (const storage::RollupSlot& slot : *slots) {
    uint64_t all = static_cast<uint64_t>(std::max<int64_t>(0, slot.samples));
    series.push_back({slot.slot_ms, all - std::min(all, slot.left_out), slot.picked});
  }
  return series;
}

}  // namespace dormant::server::api
