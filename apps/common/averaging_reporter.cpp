#include "common/averaging_reporter.hpp"

#include <cmath>
#include <cstdio>

#include "common/mpi_entry.hpp"

namespace avb::app {

MeanSe mean_se(const std::vector<double>& v) {
  MeanSe r;
  if (v.empty()) return r;
  for (double x : v) r.mean += x;
  r.mean /= static_cast<double>(v.size());
  if (v.size() < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.se = std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
  return r;
}

std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row) {
  const auto keep = static_cast<std::size_t>(kPersistentDecodeRows);
  const std::size_t first = per_row.size() > keep ? per_row.size() - keep : 0;
  std::int64_t sum = 0;
  for (std::size_t r = first; r < per_row.size(); ++r) sum += per_row[r];
  return sum;
}

void warn_persistent_decode_failures(const std::string& program, const std::vector<std::int64_t>& late_per_trial,
                                     const char* rows) {
  std::int64_t failures = 0, trials = 0;
  for (std::int64_t f : late_per_trial) {
    failures += f;
    trials += f > 0 ? 1 : 0;
  }
  if (trials == 0) return;
  report_warning(program, "decode failures persisted: " + std::to_string(failures) +
                              " quantized message(s) did not decode in the last " +
                              std::to_string(kPersistentDecodeRows) + " " + rows + " of " + std::to_string(trials) +
                              " of " + std::to_string(late_per_trial.size()) +
                              " trial(s) (lattice: each was sent again at 8 bytes a value; values more than "
                              "q*eps/2 apart need a larger --lattice-eps or --lattice-q; see docs/protocols.md)");
}

Reporter::Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet)
    : options_(options), trace_(std::move(trace)), quiet_(quiet) {}

void Reporter::print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const {
  std::printf("# %s %s (git %s)\n", program.c_str(), info.avbench_version.c_str(), info.git_sha.c_str());
  std::printf("# engine: %s (%s), peers: %d\n", info.engine.c_str(), info.mpi_library.c_str(), info.n_peers);
  std::string line;
  for (const auto& [k, v] : options) line += " " + k + "=" + v;
  std::printf("# options:%s\n", line.c_str());
  if (trace_) std::printf("# trace: %s\n", trace_->path().c_str());
  std::printf("#\n# %5s %20s", "trial", "seed");
  for (double t : options_.targets) std::printf(" %11s", ("to " + target_attribute_name(t).substr(10)).c_str());
  std::printf(" %14s %14s %12s\n", "final var", "bytes/peer", "time [s]");
  std::fflush(stdout);
}

void Reporter::on_round(const TrialRecord& trial, const RoundRow& row) {
  if (quiet_) return;
  const std::time_t now = std::time(nullptr);
  if (now - last_progress_ < 3) return;
  last_progress_ = now;
  const double wall = std::difftime(now, started_);
  std::fprintf(stderr, "[%.0fs] trial %d/%d, round %d/%d, variance %.3e\n", wall, trial.index + 1, options_.trials,
               row.round, options_.rounds, row.variance);
  std::fflush(stderr);
}

void Reporter::on_trial(const TrialRecord& trial) {
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.write_trial(trial); });
  const RoundRow& last = trial.rows.back();
  std::printf("  %5d %20llu", trial.index, static_cast<unsigned long long>(trial.seed));
  for (const auto& t : trial.targets) {
    std::string cell = std::to_string(t.rounds) + (t.reached ? " " : "*");
    std::printf(" %11s", cell.c_str());
  }
  const double per_peer = peers_ > 0 ? static_cast<double>(last.bytes_sent) / peers_ : 0.0;
  std::printf(" %14.3e %14.1f %12.4e%s\n", last.variance, per_peer, last.time, trial.complete ? "" : "  (cut short)");
  std::fflush(stdout);
}

void Reporter::finish(const std::vector<TrialRecord>& trials, bool complete) {
  std::vector<std::vector<double>> rounds(options_.targets.size());
  std::vector<double> variance, bytes, time;
  bool capped = false;
  std::size_t cut_short = 0;
  for (const auto& trial : trials) {
    if (!trial.complete) {  // a cut-short trial would bias the means (trace-format.md)
      ++cut_short;
      continue;
    }
    for (std::size_t i = 0; i < trial.targets.size() && i < rounds.size(); ++i) {
      rounds[i].push_back(trial.targets[i].rounds);
      capped = capped || !trial.targets[i].reached;
    }
    variance.push_back(trial.rows.back().variance);
    bytes.push_back(peers_ > 0 ? static_cast<double>(trial.rows.back().bytes_sent) / peers_ : 0.0);
    time.push_back(trial.rows.back().time);
  }
  std::printf("# %5s %20s", "mean", "");
  for (const auto& r : rounds) std::printf(" %11.3f", mean_se(r).mean);
  std::printf(" %14.3e %14.1f %12.4e\n", mean_se(variance).mean, mean_se(bytes).mean, mean_se(time).mean);
  std::printf("# %5s %20s", "± se", "");
  for (const auto& r : rounds) std::printf(" %11.3f", mean_se(r).se);
  std::printf(" %14.3e %14.1f %12.4e\n", mean_se(variance).se, mean_se(bytes).se, mean_se(time).se);
  if (capped) std::printf("# * target not reached: counted as the number of rounds run (the paper's cap)\n");
  if (!trace_error_.empty())
    std::printf("# run stopped: the trace could not be written (see stderr)\n");
  else if (!complete)
    std::printf("# run cut short by a stop request: %zu trial(s) recorded, %zu cut short and left out of the means\n",
                trials.size(), cut_short);
  std::fflush(stdout);
  write_guarded(trace_, trace_error_, [&](TraceWriter& t) { t.finish(complete); });
}

}  // namespace avb::app
