// What the rank-0 reporters of both apps share (averaging_reporter.hpp,
// training_reporter.hpp): the trace, written until a write fails and the run is
// asked to stop; the table's leading columns (trial, seed, one per target); the
// progress line; the summary's mean and standard-error lines and its closing notes;
// the --summary file (summary_output.hpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/mpi_entry.hpp"
#include "common/summary_output.hpp"
#include "common/trace_output.hpp"
#include "run/observer.hpp"
#include "trace/trace.hpp"

namespace avb::app {

// Mean and standard error of values seen one at a time (Welford's update), so that
// a run's memory does not grow with its trials.
struct RunningMean {
  std::size_t n = 0;
  double mean = 0, m2 = 0;
  void add(double v) {
    ++n;
    const double d = v - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (v - mean);
  }
  double se() const { return n < 2 ? 0.0 : std::sqrt(m2 / static_cast<double>(n - 1) / static_cast<double>(n)); }
};

// Decode failures count as persistent when a trial has any in its last
// kPersistentDecodeRows rows (rounds; sgd_bench: evaluations), all rows when it
// has fewer: the quantizer then no longer fits the values' spread at the end of
// the run, when they are closest.
inline constexpr int kPersistentDecodeRows = 10;
std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row);

// One column of the summary: its printf format (one double) and the values of the
// trials kept.
struct SummaryColumn {
  const char* format;
  RunningMean stats;
};

// The end both programs share: `run` under run_guarded(), then on rank 0 the
// summary (reporter.finish) and the warning about persistent decode failures
// (`rows`: "rounds" or "evaluations"). Returns the exit code.
template <class Reporter, class Run>
int run_and_summarize(const std::string& program, int rank, Reporter& reporter, const char* rows, Run&& run) {
  const auto result = run_guarded(program, rank, reporter, std::forward<Run>(run));
  if (rank == 0) {
    reporter.finish(!result.stopped);
    reporter.warn_persistent_decode_failures(program, rows);
  }
  return exit_code(program, reporter.output_error(), result.stopped);
}

class RunReporter {
 public:
  bool stop_wanted() const { return stop_signal() != 0 || !trace_error_.empty(); }
  // The run cannot go on: the trace keeps the trials written so far, complete = 0.
  void abandon() {
    write_guarded(trace_, trace_error_, [](TraceWriter& t) { t.finish(false); });
  }
  // Why the trace could not be written (rank 0; empty when it was): see write_guarded().
  const std::string& trace_error() const { return trace_error_; }
  // The trace's error, else the --summary file's (rank 0; empty when both were written).
  const std::string& output_error() const { return trace_error_.empty() ? summary_error_ : trace_error_; }
  // One warning line (report_warning) when any trial's decode failures were
  // persistent, naming the count, the trials and what to change; nothing otherwise.
  // `rows` is "rounds" or "evaluations".
  void warn_persistent_decode_failures(const std::string& program, const char* rows) const;

 protected:
  RunReporter(const std::vector<double>& targets, int peers, std::unique_ptr<TraceWriter> trace,
              const OutputFlags& output);

  // The program, engine and options lines of the header; they are also the identity
  // columns of the --summary file, which then has `columns` per trial.
  void print_run(const std::string& program, const RunInfo& info, const KeyValues& options,
                 std::vector<std::string> columns);
  // The trace line, then the column heads: trial, seed, one per target, then `own`.
  void print_heads(const std::string& own) const;

  // Writes the trial to the trace and prints its leading cells: index, seed, then
  // rounds (steps) to each target, marked * when it was not reached. Counts the
  // trial, its persistent decode failures, and whether it was cut short.
  template <class Trial>
  void start_trial_line(const Trial& trial) {
    write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_trial(trial); });
    ++recorded_;
    cut_short_ += trial.complete ? 0 : 1;
    std::vector<std::int32_t> per_row;
    for (const auto& row : trial.rows) per_row.push_back(row.decode_failures);
    if (const std::int64_t late = late_decode_failures(per_row); late > 0) {
      late_decode_failures_ += late;
      ++trials_late_;
    }
    clear_progress_line();
    std::fprintf(rows_out(), "  %5d %20llu", trial.index, static_cast<unsigned long long>(trial.seed));
    for (const auto& t : trial.targets) {
      const std::string cell = std::to_string(t.rounds) + (t.reached ? " " : "*");
      std::fprintf(rows_out(), " %11s", cell.c_str());
    }
  }
  // Where the per-trial rows go: the table's stream, or nowhere under --quiet
  // (the header and the means still print).
  std::FILE* rows_out() const;
  double per_peer(std::int64_t bytes) const { return peers_ > 0 ? static_cast<double>(bytes) / peers_ : 0.0; }

  // Whether a progress line is due: never when quiet; at most one a second on a
  // terminal, where the line rewrites itself, one every --progress-every seconds
  // otherwise (0: at every call).
  bool progress_due();
  // The progress line: the share `done` of the run's trial x round (step) work, the
  // elapsed wall-clock time, `detail`, and the time left at the rate so far.
  void print_progress(double done, const std::string& detail);
  // Wipes the progress line when the table goes to the same terminal, so that a
  // row does not print after it (the next progress line redraws it).
  void clear_progress_line();
  // --stop-at-target: trials may end early, so the ETA (which assumes every round
  // or step runs) is an upper bound, printed "ETA <= ...".
  void eta_is_bound(bool bound) { eta_is_bound_ = bound; }
  // A progress line for `done` of `total` units of work (rounds, steps) run so far,
  // when due and when there is something new.
  void print_work(long long done, double total, const char* unit);
  // Whether print_work has shown the work live: rows reported after their trial
  // ended then print no progress of their own (it would lag behind).
  bool work_shown() const { return work_shown_ >= 0; }

  // A --summary row: the per-target cells as the trace's /summary has them (rounds
  // or steps to each, the cap when not reached; then whether each was reached),
  // then `cells`, in the order of print_run's `columns`.
  template <class Trial>
  void summary_row(const Trial& trial, std::vector<SummaryCell> cells) {
    if (output_.summary.empty()) return;
    std::vector<SummaryCell> row{summary_integer(trial.index), summary_unsigned(trial.seed)};
    for (const auto& t : trial.targets) row.push_back(summary_integer(t.rounds));
    for (const auto& t : trial.targets) row.push_back(summary_integer(t.reached ? 1 : 0));
    row.insert(row.end(), cells.begin(), cells.end());
    summary_.add_row(std::move(row));
  }
  // The --summary column names of trial, seed and the targets: `to_prefix` +
  // target, then "reached_" + target.
  std::vector<std::string> target_columns(const char* to_prefix) const;

  // Counts a trial kept in the summary's means: its rounds (steps) to each target.
  template <class Trial>
  void count_targets(const Trial& trial) {
    for (std::size_t i = 0; i < trial.targets.size() && i < to_target_.size(); ++i) {
      to_target_[i].add(trial.targets[i].rounds);
      capped_ = capped_ || !trial.targets[i].reached;
    }
  }
  // The mean and "± se" lines (targets with `target_format`, then `columns`), then
  // `capped_note` when a target was not reached in some trial. A cell with no
  // trial to average shows "–", never 0 (which would read as converged at once);
  // so does the standard error of a single trial.
  void print_means(const char* target_format, const std::vector<SummaryColumn>& columns,
                   const char* capped_note) const;
  // The line under the means that says what bytes/peer and time cover; unit: round or step.
  static void print_coverage(bool stop_at_target, const char* unit);
  // The summary's last line (why the run stopped early, if it did), then the trace
  // is finished: complete = 1 only when `complete` and every write worked; then the
  // --summary file, its run_complete column the same.
  void close(bool complete);
  std::size_t recorded() const { return recorded_; }
  std::size_t cut_short() const { return cut_short_; }

  std::unique_ptr<TraceWriter> trace_;
  std::string trace_error_;

 private:
  void write_summary(bool complete);

  std::vector<double> targets_;
  int peers_;
  OutputFlags output_;
  SummaryTable summary_;
  std::string summary_error_;
  bool terminal_;  // stderr is a terminal: the progress line rewrites itself
  int progress_lines_ = 0;
  double shown_ = 0.0;  // the largest share printed
  bool eta_is_bound_ = false;  // see eta_is_bound()
  long long work_shown_ = -1;  // print_work's last count
  std::vector<RunningMean> to_target_;
  bool capped_ = false;
  std::size_t recorded_ = 0, cut_short_ = 0;         // trials written, and of those cut short
  std::int64_t late_decode_failures_ = 0;            // over all trials
  std::size_t trials_late_ = 0;                      // trials with any
  // Wall-clock seconds from std::time(): under SMPI, clock_gettime (and so
  // std::chrono's clocks) returns simulated time, which says nothing about how
  // long the user has been waiting.
  std::time_t started_ = std::time(nullptr);
  std::chrono::steady_clock::time_point run_start_ = std::chrono::steady_clock::now();  // for the wall-time line
  std::time_t last_progress_ = started_;
};

// The observer of one kind of run (run/observer.hpp) with the shared parts: asks
// the run to stop on a signal or after a failed trace write.
template <class Trial, class Row>
class ReporterOf : public RunObserver<Trial, Row>, public RunReporter {
 public:
  bool stop_requested() override { return stop_wanted(); }
  // The reporters see every trial as it ends and keep only running sums: the
  // runners need not keep the trials' rows.
  bool keeps_records() const override { return false; }

 protected:
  using RunReporter::RunReporter;
};

}  // namespace avb::app
