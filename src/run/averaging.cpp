#include "run/averaging.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/reduce.hpp"
#include "core/rng.hpp"
#include "sim/churn.hpp"
#include "sim/compute.hpp"

namespace avb {

AveragingOptions resolve(const AveragingOptions& options, int n_peers) {
  AveragingOptions r = options;
  r.protocol = resolve(options.protocol, n_peers);
  auto text = [](double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  if (!(r.fail_rate >= 0.0 && r.fail_rate <= 1.0))
    throw ConfigError("--fail-rate: " + text(r.fail_rate) + " is not a number in [0, 1]");
  validate(r.stragglers);
  if (r.protocol.quantizer.kind == QuantizerKind::lattice && r.protocol.quantizer.lattice_eps >= kMaxLatticeEps)
    throw ConfigError("--lattice-eps: " + text(r.protocol.quantizer.lattice_eps) +
                      " rounds every value of the N(0, 1) initial data to the same lattice point (a value must "
                      "reach eps / 2 to round elsewhere); accepted: a number in (0, " + text(kMaxLatticeEps) + ")");
  check_churn(r.failure, r.join_rate);
  check_failure_support(r.protocol.name, r.failure, false);
  if (!(r.detection_timeout >= 0.0 && std::isfinite(r.detection_timeout)))
    throw ConfigError("--detection-timeout: " + text(r.detection_timeout) + " is not a number >= 0 (seconds)");
  if (!(r.compute_flops >= 0.0 && std::isfinite(r.compute_flops)))
    throw ConfigError("--compute-flops: " + text(r.compute_flops) + " is not a number >= 0");
  if (r.dim < 1) throw ConfigError("--dim: " + std::to_string(r.dim) + " is not an integer >= 1");
  if (r.rounds < 0) throw ConfigError("--rounds: " + std::to_string(r.rounds) + " is not an integer >= 0");
  if (r.trials < 1) throw ConfigError("--trials: " + std::to_string(r.trials) + " is not an integer >= 1");
  if (r.targets.empty()) throw ConfigError("--target: at least one target is needed (a number > 0)");
  for (double t : r.targets)
    if (!(t > 0.0 && std::isfinite(t))) throw ConfigError("--target: " + text(t) + " is not a number > 0");
  std::sort(r.targets.begin(), r.targets.end(), std::greater<>());
  r.targets.erase(std::unique(r.targets.begin(), r.targets.end()), r.targets.end());
  return r;
}

std::vector<std::pair<std::string, std::string>> describe(const AveragingOptions& o) {
  auto out = describe(o.protocol);
  out.emplace_back("fail-rate", format_number(o.fail_rate));
  out.emplace_back("failure", std::string(to_string(o.failure)));
  if (o.failure == FailureKind::churn) out.emplace_back("join-rate", format_number(o.join_rate));
  for (auto& kv : describe(o.stragglers)) out.push_back(std::move(kv));
  out.emplace_back("compute-flops", format_number(o.compute_flops));
  out.emplace_back("detection-timeout", format_number(o.detection_timeout));
  out.emplace_back("dim", std::to_string(o.dim));
  out.emplace_back("rounds", std::to_string(o.rounds));
  out.emplace_back("trials", std::to_string(o.trials));
  out.emplace_back("seed", std::to_string(o.seed));
  std::string targets;
  for (double t : o.targets) targets += (targets.empty() ? "" : ",") + format_number(t);
  out.emplace_back("target", targets);
  out.emplace_back("stop-at-target", o.stop_at_target ? "true" : "false");
  return out;
}

void check_simulated_time(const AveragingOptions& o, double slowest_speed) {
  SimulatedTimeBudget b;
  b.computations = static_cast<double>(o.rounds) * o.trials;  // one charge per round
  b.flops = o.compute_flops;
  b.flops_flag = "--compute-flops";
  b.slowdown = o.stragglers.fraction > 0 ? o.stragglers.slowdown : 1.0;
  b.slowest_speed = slowest_speed;
  b.waits = o.fail_rate > 0 ? b.computations : 0.0;  // at most one detection per round, only under failures
  b.detection_timeout = o.detection_timeout;
  b.counts = "--rounds " + std::to_string(o.rounds) + " x --trials " + std::to_string(o.trials);
  check_simulated_time(b);
}

std::uint64_t trial_seed(std::uint64_t seed, int trial) {
  return Stream(seed, StreamId::trial_seeds).bits(static_cast<std::uint64_t>(trial), 0, 0);
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

namespace {

// Measures the population after a round with one reduction on a communicator of
// its own, so neither its bytes nor its time reach the protocol's counters.
//
// One pass, shifted by the initial mean m0 (known to every peer): the tree carries
// sum_i (x_i - m0) and sum_i ||x_i - m0||^2, which give `error` and `mean_drift`
// directly and `variance` = error - mean_drift (the two are exactly that apart).
// The subtraction costs no precision while the mean is preserved (drift ~ 1e-32);
// when a protocol moves the mean, variance is resolved to about 1e-16 * drift.
// A two-pass variance would need the mean on every peer first: three trees per
// round instead of one, and under SMPI every message costs wall time.
class Meter {
 public:
  Meter(MPI_Comm world, int dim)
      : comm_(Comm::duplicate(world)),
        dim_(static_cast<std::size_t>(dim)),
        reference_(dim_),
        buffer_(dim_ + kExtra),
        scratch_(buffer_.size()) {}

  struct Inputs {
    std::span<const double> x;
    std::uint64_t bytes_sent;  // this peer's, cumulative
    GroupCounters counters;
    double detection_seconds;  // failure detection charged to this peer, cumulative
    double step_start;         // MPI_Wtime() when this peer entered the step
    double step_end;           // and when it left it
    bool stop_requested;       // this peer's view of a stop request
  };
  struct Outputs {
    RoundRow row;         // rank 0 only (round, alive and time are the caller's)
    double step_seconds;  // the round's duration (see below), rank 0 only
    bool stop;            // any peer asked to stop (all ranks)
    double variance;      // all ranks
  };

  void set_watch(Watch* watch) { comm_.set_watch(watch); }

  // The trial's initial mean, the reference of `error` and `mean_drift`.
  void set_reference(std::span<const double> x) {
    std::copy(x.begin(), x.end(), reference_.begin());
    tree_sum_all(comm_, reference_, std::span<double>(scratch_.data(), dim_));
    for (double& m : reference_) m /= static_cast<double>(comm_.size());
  }

  // Rank 0 gets the row; every rank gets the variance and the stop verdict,
  // broadcast every round: the broadcast also lines the peers up for the next
  // step, so the `time` column does not depend on the options (sharing only
  // every few rounds made it depend on --stop-at-target, up to 50% on some rounds).
  Outputs measure(const Inputs& in) {
    const double n = static_cast<double>(comm_.size());
    const double d = static_cast<double>(dim_);
    double squares = 0.0;
    for (std::size_t k = 0; k < dim_; ++k) {
      buffer_[k] = in.x[k] - reference_[k];
      squares += buffer_[k] * buffer_[k];
    }
    // Sums first, maxima last (tree_reduce_to_root's layout). Counts below 2^53
    // add exactly in doubles.
    buffer_[dim_ + 0] = squares;
    buffer_[dim_ + 1] = static_cast<double>(in.bytes_sent);
    buffer_[dim_ + 2] = in.counters.groups;
    buffer_[dim_ + 3] = in.counters.failed_groups;
    buffer_[dim_ + 4] = in.counters.decode_failures;
    buffer_[dim_ + 5] = in.step_end - in.step_start;
    buffer_[dim_ + 6] = in.step_start;
    buffer_[dim_ + 7] = in.step_end;
    buffer_[dim_ + 8] = in.stop_requested ? 1.0 : 0.0;
    buffer_[dim_ + 9] = in.detection_seconds;
    tree_reduce_to_root(comm_, buffer_, dim_ + 5, scratch_);  // 5 sums, then 5 maxima

    Outputs out{};
    std::array<double, 2> verdict{};
    if (comm_.rank() == 0) {
      double drift = 0.0;
      for (std::size_t k = 0; k < dim_; ++k) drift += (buffer_[k] / n) * (buffer_[k] / n);
      out.row.mean_drift = drift / d;
      out.row.error = buffer_[dim_] / (n * d);
      // Rounding can take the difference below 0; NaN (overflow) must stay NaN.
      const double variance = out.row.error - out.row.mean_drift;
      out.row.variance = variance < 0.0 ? 0.0 : variance;
      out.row.bytes_sent = static_cast<std::uint64_t>(buffer_[dim_ + 1]);
      out.row.groups = static_cast<std::int32_t>(buffer_[dim_ + 2]);
      out.row.failed_groups = static_cast<std::int32_t>(buffer_[dim_ + 3]);
      out.row.decode_failures = static_cast<std::int32_t>(buffer_[dim_ + 4]);
      out.row.detection_time = buffer_[dim_ + 9];
      // A round lasts from the moment the last peer entered it to the moment the
      // last peer left it. Peers leave the previous measurement at different
      // times, and an early peer's own duration includes waiting for the rest:
      // counting that would let measurement disturb the time column. Needs one
      // clock for all peers (SMPI's simulated clock, or MPI_WTIME_IS_GLOBAL);
      // otherwise the longest per-peer duration is the best available.
      out.step_seconds = global_clock_ ? buffer_[dim_ + 7] - buffer_[dim_ + 6] : buffer_[dim_ + 5];
      verdict = {out.row.variance, buffer_[dim_ + 8]};
    }
    tree_broadcast_from_root(comm_, verdict);
    out.variance = verdict[0];
    out.stop = verdict[1] != 0.0;
    return out;
  }

 private:

  static constexpr std::size_t kExtra = 10;
  Comm comm_;
  std::size_t dim_;
  std::vector<double> reference_, buffer_, scratch_;
  bool global_clock_ = clock_is_global(comm_);
};


}  // namespace

AveragingResult run_averaging(const AveragingOptions& raw_options, MPI_Comm world, AveragingObserver& observer) {
  int n_peers = 0;
  check_mpi(MPI_Comm_size(world, &n_peers), "MPI_Comm_size");
  const AveragingOptions options = resolve(raw_options, n_peers);
  AveragingResult result;
  Watch watch(world, options.round_timeout);
  Meter meter(world, options.dim);
  meter.set_watch(&watch);
  const double min_target = options.targets.empty() ? 0.0 : options.targets.back();

  for (int k = 0; k < options.trials && !result.stopped; ++k) {
    const std::uint64_t seed = trial_seed(options.seed, k);
    watch.start(k, "round", 0);
    Comm comm = Comm::duplicate(world, &watch);
    const int me = comm.rank();
    const int n = comm.size();
    FailureModel failures(seed, options.fail_rate, options.failure, n, options.join_rate);
    const Stragglers stragglers(seed, options.stragglers);
    auto protocol = make_protocol(options.protocol, comm);

    std::vector<double> x(static_cast<std::size_t>(options.dim));
    for (int d = 0; d < options.dim; ++d) x[static_cast<std::size_t>(d)] = initial_value(seed, me, d);
    meter.set_reference(x);
    protocol->begin_trial(x, seed);

    TrialRecord trial;
    trial.index = k;
    trial.seed = seed;
    double elapsed = 0.0;
    double detection = 0.0;  // this peer's failure-detection time, cumulative

    auto measure = [&](int t, double step_start, double step_end, GroupCounters counters) {
      const auto m = meter.measure(
          {x, comm.traffic().bytes_sent, counters, detection, step_start, step_end, observer.stop_requested()});
      if (me == 0) {
        RoundRow row = m.row;
        row.round = t;
        elapsed += m.step_seconds;
        row.time = elapsed;
        row.alive = t == 0 ? n : failures.count_alive(t);
        trial.rows.push_back(row);
        observer.on_round(trial, row);
      }
      return m;
    };

    const double now = MPI_Wtime();
    auto m = measure(0, now, now, {});
    bool stop = m.stop;
    for (int t = 1; t <= options.rounds && !stop; ++t) {
      if (options.stop_at_target && m.variance < min_target) break;
      watch.start(k, "round", t);
      GroupCounters counters;
      Round round{t, seed, failures, comm, counters};
      const double start = MPI_Wtime();
      if (load_joiners(comm, failures, t, x)) protocol->on_join(x);  // churn: new peers load a live peer's state
      if (failures.alive(t, me)) charge_flops(options.compute_flops * stragglers.factor(me));
      protocol->step(x, round);
      protocol->settle(x, counters);  // asynchronous protocols: nothing left in flight
      if (counters.waited_on_failure) {
        // The failure is noticed only after the timeout: simulated time under SMPI,
        // a modelled column everywhere (never a real sleep).
        idle_seconds(options.detection_timeout);
        detection += options.detection_timeout;
      }
      m = measure(t, start, MPI_Wtime(), counters);
      stop = m.stop;
    }
    // A stop request cuts the run short after the round in which it was seen; the
    // trial is complete only if it ran to its end.
    result.stopped = stop;
    if (me == 0) {
      trial.complete = !stop;
      for (double target : options.targets) trial.targets.push_back(rounds_to_target(trial.rows, target));
      observer.on_trial(trial);
      result.trials.push_back(std::move(trial));
    }
  }
  return result;
}

}  // namespace avb
