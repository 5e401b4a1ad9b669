// sgd_bench's rank-0 observer: the table on stdout, progress on stderr, the trace
// (what it shares with averaging_bench's is in run_reporter.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/run_reporter.hpp"
#include "sgd/trainer.hpp"

namespace avb::app {

class TrainingReporter final : public ReporterOf<TrainingTrial, TrainingRow> {
 public:
  TrainingReporter(const TrainingOptions& options, int peers, std::unique_ptr<TraceWriter> trace,
                   const OutputFlags& output);

  // Also writes /optimum to the trace. `diverged_above`: the relative gap past
  // which a trial has diverged (TrainingMetrics::divergence_relative_gap).
  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options,
                    const OptimumRecord& optimum, double diverged_above);
  void on_row(const TrainingTrial& trial, const TrainingRow& row) override;
  void on_progress(long long steps_done) override;
  void on_trial(const TrainingTrial& trial) override;
  // Mean +- standard error over the complete trials that did not diverge, then the
  // trace is finished; every trial is a row of the --summary file.
  void finish(bool complete);

 private:
  int trials_, steps_;
  bool stop_at_target_;
  bool quadratic_;  // whose divergence limit comes from the peers' own optima
  // relative gap, consensus, accuracy, bytes, time
  std::vector<SummaryColumn> columns_{{" %12.3e", {}}, {" %12.3e", {}}, {" %9.4f", {}}, {" %14.1f", {}}, {" %12.4e", {}}};
  std::size_t diverged_ = 0;
  std::string program_;           // from print_header, for the warning line
  double diverged_above_ = 0.0;   // from print_header
  bool warned_diverged_ = false;  // one warning line per run, at the first diverged trial
};

}  // namespace avb::app
