// sgd_bench's rank-0 observer: the table on stdout, progress on stderr, the trace.
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/app_support.hpp"
#include "sgd/trainer.hpp"
#include "trace/trace.hpp"

namespace avb::app {

class TrainingReporter final : public TrainingObserver {
 public:
  TrainingReporter(const TrainingOptions& options, int peers, std::unique_ptr<TraceWriter> trace, bool quiet);

  // Also writes /optimum to the trace.
  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options,
                    const OptimumRecord& optimum);
  void on_eval(const TrainingTrial& trial, const TrainingRow& row) override;
  void on_trial(const TrainingTrial& trial) override;
  bool stop_requested() override { return stop_signal() != 0 || !trace_error_.empty(); }
  // Mean +- standard error over the complete trials that did not diverge, then the
  // trace is finished.
  void finish(const std::vector<TrainingTrial>& trials, bool complete);
  // The run cannot go on: the trace keeps the trials written so far, complete = 0.
  void abandon() {
    write_guarded(trace_, trace_error_, [](TraceWriter& t) { t.finish(false); });
  }
  // Why the trace could not be written (empty when it was): see write_guarded().
  const std::string& trace_error() const { return trace_error_; }

 private:
  TrainingOptions options_;
  int peers_;
  std::unique_ptr<TraceWriter> trace_;
  std::string trace_error_;
  bool quiet_;
  std::string program_;       // from print_header, for the warning line
  bool warned_diverged_ = false;  // one warning line per run, at the first diverged trial
  // Wall-clock seconds from std::time(): under SMPI, std::chrono reads simulated time.
  std::time_t started_ = std::time(nullptr);
  std::time_t last_progress_ = started_;
};

}  // namespace avb::app
