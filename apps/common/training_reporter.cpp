#include "common/training_reporter.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sgd/metrics.hpp"

namespace avb::app {

TrainingReporter::TrainingReporter(const TrainingOptions& options, int peers, std::unique_ptr<TraceWriter> trace,
                                   const OutputFlags& output)
    : ReporterOf(options.targets, peers, std::move(trace), output),
      trials_(options.trials),
      steps_(options.steps),
      stop_at_target_(options.stop_at_target),
      quadratic_(options.objective.kind == ObjectiveKind::quadratic) {
  eta_is_bound(options.stop_at_target);
}

void TrainingReporter::print_header(const std::string& program, const RunInfo& info, const KeyValues& options,
                                    const OptimumRecord& optimum, double diverged_above) {
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_optimum(optimum); });
  program_ = program;
  diverged_above_ = diverged_above;
  auto columns = target_columns("steps_to_");
  for (const char* c : {"final_relative_gap", "final_consensus", "final_accuracy", "bytes_per_peer", "time",
                        "steps", "rounds", "complete", "diverged"})
    columns.emplace_back(c);
  print_run(program, info, options, std::move(columns));
  std::fprintf(table_out(), "# optimum (%s): f* = %.17g, f(x0) = %.17g, |grad f(x*)| = %.3e\n", optimum.method.c_str(),
              optimum.loss, optimum.initial_loss, optimum.gradient_norm);
  if (!optimum.test_set.empty()) std::fprintf(table_out(), "# accuracy measured on: %s\n", optimum.test_set.c_str());
  // The rule, before any trial meets it (sgd/metrics.hpp, TrainingMetrics::diverged).
  if (std::isfinite(diverged_above))
    std::fprintf(table_out(), "# a trial diverges when its model is not finite or its relative gap exceeds %.3g (%g x %s)\n",
                diverged_above, TrainingMetrics::kDivergenceFactor,
                quadratic_ ? "the widest gap between x0 and the peers' own optima, over the gap at x0"
                           : "the gap at x0");
  else
    std::fprintf(table_out(), "# a trial diverges when its model is not finite (the gap at x0 is 0)\n");
  char own[80];
  std::snprintf(own, sizeof own, " %12s %12s %9s %14s %12s", "rel. gap", "consensus", "accuracy", "bytes/peer",
                "time [s]");
  print_heads(own);
}

void TrainingReporter::on_row(const TrainingTrial& trial, const TrainingRow& row) {
  if (work_shown() || !progress_due()) return;
  char detail[128];
  std::snprintf(detail, sizeof detail, "trial %d/%d, step %d/%d, relative gap %.3e, consensus %.3e",
                trial.index + 1, trials_, row.step, steps_, row.relative_gap, row.consensus);
  const double work = static_cast<double>(trials_) * steps_;
  print_progress(work > 0 ? (static_cast<double>(trial.index) * steps_ + row.step) / work : 0.0, detail);
}

// The sequential engine's steps run so far, in the trials on threads: progress
// within a long trial, which on_row sees only once the trial has ended.
void TrainingReporter::on_progress(long long steps_done) {
  print_work(steps_done, static_cast<double>(trials_) * steps_, "steps");
}

void TrainingReporter::on_trial(const TrainingTrial& trial) {
  start_trial_line(trial);
  const TrainingRow& last = trial.rows.back();
  if (trial.diverged) {
    // Not a result to read or average: the model left double precision, or is on
    // its way out (TrainingMetrics::diverged).
    std::fprintf(rows_out(), " %12s %12s %9s %14.1f %12.4e  (diverged at step %d)\n", "diverged", "diverged", "-",
                per_peer(last.bytes_sent), last.time, last.step);
    if (!warned_diverged_) {
      warned_diverged_ = true;
      char why[160];
      if (std::isfinite(last.relative_gap) && std::isfinite(last.consensus))
        std::snprintf(why, sizeof why, "its relative gap reached %.3g, above this problem's limit %.3g,",
                      last.relative_gap, diverged_above_);
      else
        std::snprintf(why, sizeof why, "the model became NaN or infinite");
      char line[400];
      std::snprintf(line, sizeof line,
                    "trial %d diverged: %s by step %d (is --lr too large?); such trials are stopped there, marked "
                    "diverged in the trace and left out of the means",
                    trial.index, why, last.step);
      report_warning(program_, line);
    }
  } else {
    std::fprintf(rows_out(), " %12.3e %12.3e %9.4f %14.1f %12.4e%s\n", last.relative_gap, last.consensus, last.accuracy,
                per_peer(last.bytes_sent), last.time, trial.complete ? "" : "  (cut short)");
  }
  std::fflush(table_out());
  summary_row(trial, {summary_number(last.relative_gap), summary_number(last.consensus), summary_number(last.accuracy),
                      summary_number(per_peer(last.bytes_sent)), summary_number(last.time), summary_integer(last.step),
                      summary_integer(last.round), summary_integer(trial.complete), summary_integer(trial.diverged)});
  if (!trial.complete) return;
  if (trial.diverged) {
    ++diverged_;
    return;
  }
  count_targets(trial);
  const double cells[] = {last.relative_gap, last.consensus, last.accuracy, per_peer(last.bytes_sent), last.time};
  // NaN is a value not measured (a quadratic's accuracy): its mean shows "–", not nan.
  for (std::size_t c = 0; c < columns_.size(); ++c)
    if (!std::isnan(cells[c])) columns_[c].stats.add(cells[c]);
}

void TrainingReporter::finish(bool complete) {
  print_means(" %11.1f", columns_, "counted as the number of steps run");
  print_coverage(stop_at_target_, "step");
  if (diverged_ > 0)
    std::fprintf(table_out(), "# %zu of %zu trial(s) diverged (model NaN or infinite, or relative gap above %.3g): left out of "
                "the means%s\n",
                diverged_, recorded(), diverged_above_,
                diverged_ == recorded() - cut_short() ? ", which are therefore empty" : "");
  close(complete);
}

}  // namespace avb::app
