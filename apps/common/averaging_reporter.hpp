// averaging_bench's rank-0 observer: the table on stdout, progress on stderr, the
// trace (what it shares with sgd_bench's is in run_reporter.hpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/run_reporter.hpp"
#include "run/averaging.hpp"

namespace avb::app {

class AveragingReporter final : public ReporterOf<TrialRecord, RoundRow> {
 public:
  AveragingReporter(const AveragingOptions& options, int peers, std::unique_ptr<TraceWriter> trace,
                    const OutputFlags& output);

  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options);
  void on_row(const TrialRecord& trial, const RoundRow& row) override;
  void on_trial(const TrialRecord& trial) override;
  void on_progress(long long rounds_done) override;
  // Mean +- standard error over the complete trials, then the trace is finished;
  // every trial is a row of the --summary file.
  void finish(bool complete);

 private:
  int trials_, rounds_;
  bool stop_at_target_;
  std::vector<SummaryColumn> columns_{{" %14.3e", {}}, {" %14.1f", {}}, {" %12.4e", {}}};  // variance, bytes, time
};

}  // namespace avb::app
