// A profiler made of candidates tried in order at start(): the first that starts is the one that
// runs (eBPF, else perf). Each one passed over is logged with its reason; when none starts, the
// error gives every reason. Its name is that of the one running, or of the last one tried.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "profilers/profiler.h"

namespace dormant::module {

class FirstThatStarts final : public profilers::Profiler {
 public:
  explicit FirstThatStarts(std::vector<std::unique_ptr<profilers::Profiler>> candidates);

  std::string_view name() const override;
  std::string_view event() const override;
  Result<void> start() override;
  Result<profile::StackTable> snapshot() override;
  void before_last_snapshot() override;
  void stop() override;
  void abort() override;

 private:
  std::vector<std::unique_ptr<profilers::Profiler>> candidates_;
  size_t current_ = 0;  // the one running, or the last one tried
};

}  // namespace dormant::module
