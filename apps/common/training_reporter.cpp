#include "common/training_reporter.hpp"

#include <cmath>
#include <cstdio>

namespace avb::app {

TrainingReporter::TrainingReporter(const TrainingOptions& options, int peers, std::unique_ptr<TraceWriter> trace,
                                   bool quiet)
    : options_(options), peers_(peers), trace_(std::move(trace)), quiet_(quiet) {}

void TrainingReporter::print_header(const std::string& program, const RunInfo& info, const KeyValues& options,
                                    const OptimumRecord& optimum) {
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_optimum(optimum); });
  program_ = program;
  std::printf("# %s %s (git %s)\n", program.c_str(), info.avbench_version.c_str(), info.git_sha.c_str());
  std::printf("# engine: %s (%s), peers: %d\n", info.engine.c_str(), info.mpi_library.c_str(), info.n_peers);
  std::string line;
  for (const auto& [k, v] : options) line += " " + k + "=" + v;
  std::printf("# options:%s\n", line.c_str());
  std::printf("# optimum (%s): f* = %.17g, f(x0) = %.17g, |grad f(x*)| = %.3e\n", optimum.method.c_str(),
              optimum.loss, optimum.initial_loss, optimum.gradient_norm);
  if (!optimum.test_set.empty()) std::printf("# accuracy measured on: %s\n", optimum.test_set.c_str());
  if (trace_) std::printf("# trace: %s\n", trace_->path().c_str());
  std::printf("#\n# %5s %20s", "trial", "seed");
  for (double t : options_.targets) std::printf(" %11s", ("to " + target_attribute_name(t).substr(10)).c_str());
  std::printf(" %12s %12s %9s %14s %12s\n", "rel. gap", "consensus", "accuracy", "bytes/peer", "time [s]");
  std::fflush(stdout);
}

void TrainingReporter::on_eval(const TrainingTrial& trial, const TrainingRow& row) {
  if (quiet_) return;
  const std::time_t now = std::time(nullptr);
  if (now - last_progress_ < 3) return;
  last_progress_ = now;
  std::fprintf(stderr, "[%.0fs] trial %d/%d, step %d/%d, relative gap %.3e, consensus %.3e\n",
               std::difftime(now, started_), trial.index + 1, options_.trials, row.step, options_.steps,
               row.relative_gap, row.consensus);
  std::fflush(stderr);
}

void TrainingReporter::on_trial(const TrainingTrial& trial) {
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_trial(trial); });
  const TrainingRow& last = trial.rows.back();
  std::printf("  %5d %20llu", trial.index, static_cast<unsigned long long>(trial.seed));
  for (const auto& t : trial.targets) {
    const std::string cell = std::to_string(t.rounds) + (t.reached ? " " : "*");
    std::printf(" %11s", cell.c_str());
  }
  if (trial.diverged) {
    // Not a number to average: the model left double precision.
    std::printf(" %12s %12s %9s %14.1f %12.4e  (diverged at step %d)\n", "diverged", "diverged", "-",
                static_cast<double>(last.bytes_sent) / peers_, last.time, last.step);
    if (!warned_diverged_) {
      warned_diverged_ = true;
      std::fprintf(stderr,
                   "%s: warning: trial %d diverged: the model became NaN or infinite by step %d (is --lr too "
                   "large?); such trials are stopped there, marked diverged in the trace and left out of the "
                   "means\n",
                   program_.c_str(), trial.index, last.step);
      std::fflush(stderr);
    }
  } else {
    std::printf(" %12.3e %12.3e %9.4f %14.1f %12.4e%s\n", last.relative_gap, last.consensus, last.accuracy,
                static_cast<double>(last.bytes_sent) / peers_, last.time, trial.complete ? "" : "  (cut short)");
  }
  std::fflush(stdout);
}

void TrainingReporter::finish(const std::vector<TrainingTrial>& trials, bool complete) {
  std::vector<std::vector<double>> steps(options_.targets.size());
  std::vector<double> gap, consensus, accuracy, bytes, time;
  bool capped = false;
  std::size_t cut_short = 0, diverged = 0;
  for (const auto& trial : trials) {
    if (!trial.complete) {
      ++cut_short;
      continue;
    }
    if (trial.diverged) {
      ++diverged;
      continue;
    }
    for (std::size_t i = 0; i < trial.targets.size() && i < steps.size(); ++i) {
      steps[i].push_back(trial.targets[i].rounds);
      capped = capped || !trial.targets[i].reached;
    }
    const TrainingRow& last = trial.rows.back();
    gap.push_back(last.relative_gap);
    consensus.push_back(last.consensus);
    accuracy.push_back(last.accuracy);
    bytes.push_back(static_cast<double>(last.bytes_sent) / peers_);
    time.push_back(last.time);
  }
  auto line = [&](const char* label, auto pick) {
    std::printf("# %5s %20s", label, "");
    for (const auto& s : steps) std::printf(" %11.1f", pick(mean_se(s)));
    std::printf(" %12.3e %12.3e %9.4f %14.1f %12.4e\n", pick(mean_se(gap)), pick(mean_se(consensus)),
                pick(mean_se(accuracy)), pick(mean_se(bytes)), pick(mean_se(time)));
  };
  line("mean", [](const MeanSe& m) { return m.mean; });
  line("± se", [](const MeanSe& m) { return m.se; });
  if (capped) std::printf("# * target not reached: counted as the number of steps run\n");
  if (diverged > 0)
    std::printf("# %zu of %zu trial(s) diverged (NaN or infinite model): left out of the means%s\n", diverged,
                trials.size(), diverged == trials.size() - cut_short ? ", which are therefore empty" : "");
  if (!trace_error_.empty())
    std::printf("# run stopped: the trace could not be written (see stderr)\n");
  else if (!complete)
    std::printf("# run cut short by a stop request: %zu trial(s) recorded, %zu cut short and left out of the means\n",
                trials.size(), cut_short);
  std::fflush(stdout);
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.finish(complete); });
}

}  // namespace avb::app
