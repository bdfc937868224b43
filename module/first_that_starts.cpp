#include "module/first_that_starts.h"

#include <spdlog/spdlog.h>

namespace dormant::module {

FirstThatStarts::FirstThatStarts(std::vector<std::unique_ptr<profilers::Profiler>> candidates)
    : candidates_(std::move(candidates)) {}

std::string_view FirstThatStarts::name() const {
  return candidates_.empty() ? "none" : candidates_[current_]->name();
}

std::string_view FirstThatStarts::event() const {
  return candidates_.empty() ? "" : candidates_[current_]->event();
}

Result<void> FirstThatStarts::start() {
  std::string reasons;
  ErrorKind kind = ErrorKind::kUnavailable;
  for (current_ = 0; current_ < candidates_.size(); ++current_) {
    profilers::Profiler& candidate = *candidates_[current_];
    Result<void> started = ok();
    try {
      started = candidate.start();
    } catch (const std::exception& thrown) {
      started = Error(ErrorKind::kSystem,
                      std::string(candidate.name()) + ": start() threw: " + thrown.what());
    }
    if (started) return ok();
    candidate.stop();
    reasons += (reasons.empty() ? "" : "; ") + started.error().message();
    if (started.error().kind() != ErrorKind::kUnavailable) kind = started.error().kind();
    if (current_ + 1 < candidates_.size()) {
      spdlog::warn("{} does not run here ({}); trying {}", candidate.name(),
                   started.error().message(), candidates_[current_ + 1]->name());
    }
  }
  current_ = candidates_.empty() ? 0 : candidates_.size() - 1;
  return Error(kind, reasons.empty() ? "no profiler to try" : reasons);
}

Result<profile::StackTable> FirstThatStarts::snapshot() {
  return candidates_[current_]->snapshot();
}

void FirstThatStarts::before_last_snapshot() {
  if (!candidates_.empty()) candidates_[current_]->before_last_snapshot();
}

void FirstThatStarts::stop() {
  if (!candidates_.empty()) candidates_[current_]->stop();
}

void FirstThatStarts::abort() {
  if (!candidates_.empty()) candidates_[current_]->abort();
}

}  // namespace dormant::module
