#include "run/averaging.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/reduce.hpp"
#include "core/rng.hpp"
#include "core/watch.hpp"
#include "run/skeleton.hpp"
#include "run/stats.hpp"
#include "sim/churn.hpp"
#include "sim/compute.hpp"

namespace avb {

AveragingOptions resolve(const AveragingOptions& options, int n_peers) {
  AveragingOptions r = options;
  resolve_run(r, n_peers, false);
  if (r.protocol.quantizer.kind == QuantizerKind::lattice && r.protocol.quantizer.lattice_eps >= kMaxLatticeEps)
    throw ConfigError("--lattice-eps: " + format_number(r.protocol.quantizer.lattice_eps) +
                      " rounds every value of the N(0, 1) initial data to the same lattice point (a value must "
                      "reach eps / 2 to round elsewhere); accepted: a number in (0, " + format_number(kMaxLatticeEps) +
                      ")");
  require(r.compute_flops >= 0.0 && std::isfinite(r.compute_flops), "--compute-flops", r.compute_flops,
          "a number >= 0");
  require(r.dim >= 1, "--dim", r.dim, "an integer >= 1");
  if (r.protocol.wait.policy != WaitPolicy::all && r.compute_flops <= 0)
    throw ConfigError("--wait: " + std::string(kWaitPolicyNames.name(r.protocol.wait.policy)) +
                      " waits for the members' work, and there is none; accepted: --wait all, or --compute-flops > 0");
  if (r.model_dim == 0) r.model_dim = r.dim;
  // Only a --model-dim above --dim is bounded: without one, --dim's own limits apply.
  require(r.model_dim == r.dim || (r.model_dim > r.dim && r.model_dim <= kMaxModelDim), "--model-dim", static_cast<double>(r.model_dim),
          "an integer from --dim (" + std::to_string(r.dim) + ") to " + std::to_string(kMaxModelDim));
  if (r.model_dim > r.dim && r.protocol.quantizer.kind != QuantizerKind::none)
    throw ConfigError("--model-dim: cannot be combined with --quantizer " + to_string(r.protocol.quantizer) +
                      " (encoded messages are not scaled to the model); accepted: --quantizer none or --model-dim " +
                      std::to_string(r.dim));
  if (r.model_dim > r.dim && r.protocol.collective == Collective::mpi)
    throw ConfigError("--model-dim: cannot be combined with --collective mpi (the library's all-reduce sends the "
                      "values as they are); accepted: another --collective or --model-dim " + std::to_string(r.dim));
  require(r.rounds >= 0, "--rounds", r.rounds, "an integer >= 0");
  return r;
}

std::vector<std::pair<std::string, std::string>> describe(const AveragingOptions& o) {
  auto out = describe(o.protocol);
  describe_failures(o, out);
  out.emplace_back("compute-flops", format_number(o.compute_flops));
  out.emplace_back("detection-timeout", format_number(o.detection_timeout));
  out.emplace_back("dim", std::to_string(o.dim));
  // Only when it differs from dim, so that traces of runs without it stay as they were.
  if (o.model_dim > o.dim) out.emplace_back("model-dim", std::to_string(o.model_dim));
  out.emplace_back("rounds", std::to_string(o.rounds));
  describe_trials(o, out);
  return out;
}

void check_simulated_time(const AveragingOptions& o, double slowest_speed) {
  SimulatedTimeBudget b;
  b.computations = static_cast<double>(o.rounds) * o.trials;  // one charge per round
  b.flops = o.compute_flops;
  b.flops_flag = "--compute-flops";
  b.slowdown = (o.stragglers.fraction > 0 ? o.stragglers.slowdown : 1.0) * max_work_jitter(o.stragglers.sigma);
  b.slowest_speed = slowest_speed;
  b.waits = failures_possible(o) ? b.computations : 0.0;  // at most one detection per round, only under failures
  b.detection_timeout = o.detection_timeout;
  b.counts = "--rounds " + std::to_string(o.rounds) + " x --trials " + std::to_string(o.trials);
  check_simulated_time(b);
}

double initial_value(std::uint64_t seed, int peer, int k) {
  return Stream(seed, StreamId::initial_values)
      .normal(0, static_cast<std::uint64_t>(peer), static_cast<std::uint64_t>(k));
}

TargetResult rounds_to_target(const std::vector<RoundRow>& rows, double target) {
  TargetResult result{target, rows.empty() ? 0 : rows.back().round, false};
  for (const RoundRow& row : rows)
    if (row.variance < target) return {target, row.round, true};
  return result;
}

Arrivals round_arrivals(const AveragingOptions& options, std::uint64_t trial_seed, const PlatformModel& platform) {
  return Arrivals(trial_seed, options.stragglers, options.compute_flops, options.protocol.wait,
                  [platform](int peer) { return platform.speed_of(peer); });
}

namespace {

// Measures the population after a round with one StatsReduction (run/stats.hpp).
//
// One pass, shifted by the initial mean m0 (known to every peer): the tree carries
// sum_i (x_i - m0) and sum_i ||x_i - m0||^2, which give `error` and `mean_drift`
// directly and `variance` = error - mean_drift (the two are exactly that apart).
// The subtraction costs no precision while the mean is preserved (drift ~ 1e-32);
// when a protocol moves the mean, variance is resolved to about 1e-16 * drift.
// A two-pass variance would need the mean on every peer first: three trees per
// round instead of one, and under SMPI every message costs wall time.
class AveragingMeter {
 public:
  AveragingMeter(MPI_Comm world, int dim)
      : stats_(world, static_cast<std::size_t>(dim)), reference_(stats_.vector().size()), scratch_(reference_.size()) {}

  struct Outputs {
    RoundRow row;           // rank 0 only (round, alive and time are the caller's)
    double seconds = 0.0;   // the round's duration, rank 0 only
    bool stop = false;      // any peer asked to stop (all ranks)
    double variance = 0.0;  // all ranks
  };

  void set_watch(Watch* watch) { stats_.set_watch(watch); }

  // The trial's initial mean, the reference of `error` and `mean_drift`.
  void set_reference(std::span<const double> x) {
    std::copy(x.begin(), x.end(), reference_.begin());
    tree_sum_all(stats_.comm(), reference_, scratch_);
    for (double& m : reference_) m /= static_cast<double>(stats_.comm().size());
  }

  // `tally.squares` is filled here. Rank 0 gets the row; every rank the variance
  // and the stop verdict.
  Outputs measure(std::span<const double> x, PeerTally tally) {
    const std::span<double> shifted = stats_.vector();
    for (std::size_t k = 0; k < shifted.size(); ++k) {
      shifted[k] = x[k] - reference_[k];
      tally.squares += shifted[k] * shifted[k];
    }
    Outputs out;
    const auto verdict = stats_.measure(tally, [&](const Totals& totals) {
      out.row = row(shifted, totals);
      out.seconds = totals.seconds;
      return std::array<double, 2>{out.row.variance, totals.stop_requested ? 1.0 : 0.0};
    });
    out.variance = verdict[0];
    out.stop = verdict[1] != 0.0;
    return out;
  }

 private:
  // Rank 0: the row from the summed shifted vector and the totals.
  RoundRow row(std::span<const double> sums, const Totals& totals) {
    const double n = static_cast<double>(stats_.comm().size());
    const double d = static_cast<double>(sums.size());
    RoundRow row;
    double drift = 0.0;
    for (double s : sums) drift += (s / n) * (s / n);
    row.mean_drift = drift / d;
    row.error = totals.squares / (n * d);
    // Rounding can take the difference below 0; NaN (overflow) must stay NaN.
    const double variance = row.error - row.mean_drift;
    row.variance = variance < 0.0 ? 0.0 : variance;
    totals.copy_counters_to(row);
    return row;
  }

  StatsReduction stats_;
  std::vector<double> reference_, scratch_;
};

// One trial of R rounds: row 0 is the initial state, then one row per round.
// Returns whether a stop request was seen.
bool run_averaging_trial(const AveragingOptions& options, const PlatformModel& platform, AveragingMeter& meter,
                         AveragingObserver& observer, Watch& watch, Trial& trial, TrialRecord& record) {
  std::vector<double> x(static_cast<std::size_t>(options.dim));
  for (int d = 0; d < options.dim; ++d) x[static_cast<std::size_t>(d)] = initial_value(trial.seed, trial.me, d);
  meter.set_reference(x);
  trial.comm.set_model_length({x.size(), static_cast<std::size_t>(options.model_dim)});
  trial.protocol->begin_trial(x, trial.seed);
  const Arrivals arrivals = round_arrivals(options, trial.seed, platform);
  const bool waits = options.protocol.wait.policy != WaitPolicy::all && options.compute_flops > 0;

  auto measure = [&](int t, double start, double end, GroupCounters counters) {
    const auto m = meter.measure(x, {0.0, trial.comm.traffic().bytes_sent, counters, start, end,
                                     observer.stop_requested(), trial.detection});
    if (trial.me == 0) {
      RoundRow row = m.row;
      row.round = t;
      trial.stamp(row, t, m.seconds);
      record.rows.push_back(row);
      observer.on_row(record, row);
    }
    return m;
  };

  const double min_target = options.targets.back();
  const double now = MPI_Wtime();
  auto m = measure(0, now, now, {});
  for (int t = 1; t <= options.rounds && !m.stop; ++t) {
    if (options.stop_at_target && m.variance < min_target) break;
    watch.start(trial.index, "round", t);
    GroupCounters counters;
    Round round{t, trial.seed, trial.failures, trial.comm, counters, waits ? &arrivals : nullptr};
    const double start = MPI_Wtime();
    // Churn: new peers load a live peer's state.
    if (load_joiners(trial.comm, trial.failures, t, x)) trial.protocol->on_join(x);
    const bool up = trial.failures.alive(t, trial.me);
    // Under a waiting policy the protocol charges the work (a late peer's is cut
    // short); a peer in no group works on, unwaited for.
    if (up && !waits) charge_flops(options.compute_flops * arrivals.work_factor(t, trial.me));
    trial.protocol->step(x, round);
    if (up && waits) round.charge_work(arrivals.at(t, trial.me));
    trial.protocol->settle(x, counters);  // asynchronous protocols: nothing left in flight
    trial.charge_detection(counters, options.detection_timeout);
    m = measure(t, start, MPI_Wtime(), counters);
  }
  // A stop request cuts the run short after the round in which it was seen; the
  // trial is complete only if it ran to its end.
  record.complete = !m.stop;
  for (double target : options.targets) record.targets.push_back(rounds_to_target(record.rows, target));
  return m.stop;
}

}  // namespace

AveragingResult run_averaging(const AveragingOptions& options, MPI_Comm world, AveragingObserver& observer,
                              const PlatformModel& platform) {
  require_resolved(options, world_size(world), "run_averaging");
  AveragingResult result;
  Watch watch(world, options.round_timeout);
  AveragingMeter meter(world, options.dim);
  meter.set_watch(&watch);
  result.stopped = run_trials(options, world, watch, "round", observer, result.trials,
                              [&](Trial& trial, TrialRecord& record) {
                                return run_averaging_trial(options, platform, meter, observer, watch, trial, record);
                              });
  return result;
}

}  // namespace avb
