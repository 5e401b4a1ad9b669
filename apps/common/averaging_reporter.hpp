// averaging_bench's rank-0 observer (the table on stdout, progress on stderr,
// the trace), and the end-of-run summaries both apps print.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/mpi_entry.hpp"
#include "common/trace_output.hpp"
#include "run/averaging.hpp"
#include "trace/trace.hpp"

namespace avb::app {

// mean +- standard error (0 for fewer than two values).
struct MeanSe {
  double mean = 0, se = 0;
};
MeanSe mean_se(const std::vector<double>& values);

// Decode failures count as persistent when a trial has any in its last
// kPersistentDecodeRows rows (rounds; sgd_bench: evaluations), all rows when it
// has fewer: the quantizer then no longer fits the values' spread at the end of
// the run, when they are closest.
inline constexpr int kPersistentDecodeRows = 10;
std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row);
// One warning line (report_warning) when any trial's failures were persistent,
// naming the count, the trials and what to change; nothing otherwise. `rows` is
// "rounds" or "evaluations".
void warn_persistent_decode_failures(const std::string& program, const std::vector<std::int64_t>& late_per_trial,
                                     const char* rows);
template <class Trial>
void warn_persistent_decode_failures(const std::string& program, const std::vector<Trial>& trials,
                                     const char* rows) {
  std::vector<std::int64_t> late;
  for (const auto& trial : trials) {
    std::vector<std::int32_t> per_row;
    for (const auto& row : trial.rows) per_row.push_back(row.decode_failures);
    late.push_back(late_decode_failures(per_row));
  }
  warn_persistent_decode_failures(program, late, rows);
}

// Rank 0's observer: prints the table, writes the trace, shows progress.
class Reporter final : public AveragingObserver {
 public:
  Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet);

  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const;
  void on_round(const TrialRecord& trial, const RoundRow& row) override;
  void on_trial(const TrialRecord& trial) override;
  bool stop_requested() override { return stop_signal() != 0 || !trace_error_.empty(); }
  // Mean +- standard error over the trials, then the trace is finished.
  void finish(const std::vector<TrialRecord>& trials, bool complete);
  // The run cannot go on: the trace keeps the trials written so far, complete = 0.
  void abandon() {
    write_guarded(trace_, trace_error_, [](TraceWriter& t) { t.finish(false); });
  }
  // Why the trace could not be written (rank 0; empty when it was).
  const std::string& trace_error() const { return trace_error_; }

 private:
  AveragingOptions options_;
  std::unique_ptr<TraceWriter> trace_;
  std::string trace_error_;
  bool quiet_;
  int peers_ = 0;
  // Wall-clock seconds from std::time(): under SMPI, clock_gettime (and so
  // std::chrono's clocks) returns simulated time, which says nothing about how
  // long the user has been waiting.
  std::time_t started_ = std::time(nullptr);
  std::time_t last_progress_ = started_;

 public:
  void set_peers(int n) { peers_ = n; }
};

}  // namespace avb::app
