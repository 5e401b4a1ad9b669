#include "common/averaging_reporter.hpp"

#include <algorithm>
#include <cstdio>

namespace avb::app {

AveragingReporter::AveragingReporter(const AveragingOptions& options, int peers, std::unique_ptr<TraceWriter> trace,
                                     const OutputFlags& output)
    : ReporterOf(options.targets, peers, std::move(trace), output),
      trials_(options.trials),
      rounds_(options.rounds),
      stop_at_target_(options.stop_at_target) {
  eta_is_bound(options.stop_at_target);
}

void AveragingReporter::print_header(const std::string& program, const RunInfo& info, const KeyValues& options) {
  auto columns = target_columns("rounds_to_");
  for (const char* c : {"final_variance", "bytes_per_peer", "time", "rounds", "complete"}) columns.emplace_back(c);
  print_run(program, info, options, std::move(columns));
  char own[64];
  std::snprintf(own, sizeof own, " %14s %14s %12s", "final var", "bytes/peer", "time [s]");
  print_heads(own);
}

void AveragingReporter::on_row(const TrialRecord& trial, const RoundRow& row) {
  if (work_shown() || !progress_due()) return;
  char detail[96];
  std::snprintf(detail, sizeof detail, "trial %d/%d, round %d/%d, variance %.3e", trial.index + 1, trials_, row.round,
                rounds_, row.variance);
  const double work = static_cast<double>(trials_) * rounds_;
  print_progress(work > 0 ? (static_cast<double>(trial.index) * rounds_ + row.round) / work : 0.0, detail);
}

// The sequential engine's rounds run so far, in the trials on threads: progress
// within a long trial, which on_row sees only once the trial has ended.
void AveragingReporter::on_progress(long long rounds_done) {
  print_work(rounds_done, static_cast<double>(trials_) * rounds_, "rounds");
}

void AveragingReporter::on_trial(const TrialRecord& trial) {
  start_trial_line(trial);
  const RoundRow& last = trial.rows.back();
  std::fprintf(rows_out(), " %14.3e %14.1f %12.4e%s\n", last.variance, per_peer(last.bytes_sent), last.time,
              trial.complete ? "" : "  (cut short)");
  std::fflush(table_out());
  summary_row(trial, {summary_number(last.variance), summary_number(per_peer(last.bytes_sent)),
                      summary_number(last.time), summary_integer(last.round), summary_integer(trial.complete)});
  if (!trial.complete) return;  // a cut-short trial would bias the means (trace-format.md)
  count_targets(trial);
  columns_[0].stats.add(last.variance);
  columns_[1].stats.add(per_peer(last.bytes_sent));
  columns_[2].stats.add(last.time);
}

void AveragingReporter::finish(bool complete) {
  print_means(" %11.3f", columns_, "counted as the number of rounds run (the paper's cap)");
  print_coverage(stop_at_target_, "round");
  close(complete);
}

}  // namespace avb::app
