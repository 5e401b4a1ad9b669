#include "run/averaging.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/reduce.hpp"
#include "core/rng.hpp"

namespace avb {

AveragingOptions resolve(const AveragingOptions& options) {
  AveragingOptions r = options;
  r.protocol = resolve(options.protocol);
  if (!(r.fail_rate >= 0.0 && r.fail_rate <= 1.0)) throw ConfigError("--fail-rate: must be a number in [0, 1]");
  if (r.dim < 1) throw ConfigError("--dim: must be an integer >= 1");
  if (r.rounds < 0) throw ConfigError("--rounds: must be an integer >= 0");
  if (r.trials < 1) throw ConfigError("--trials: must be an integer >= 1");
  for (double t : r.targets)
    if (!(t > 0.0 && std::isfinite(t))) throw ConfigError("--target: must be a positive number");
  std::sort(r.targets.begin(), r.targets.end(), std::greater<>());
  r.targets.erase(std::unique(r.targets.begin(), r.targets.end()), r.targets.end());
  return r;
}

namespace {
std::string format_number(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  // Shortest text that reads back to the same double.
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    if (std::stod(t.str()) == v) return t.str();
  }
  return s.str();
}
}  // namespace

std::vector<std::pair<std::string, std::string>> describe(const AveragingOptions& o) {
  auto out = describe(o.protocol);
  out.emplace_back("fail-rate", format_number(o.fail_rate));
  out.emplace_back("failure", std::string(to_string(o.failure)));
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

std::uint64_t trial_seed(std::uint64_t seed, int trial) { return seed + static_cast<std::uint64_t>(trial); }

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

// Measures the population after a round with reductions on a communicator of its
// own, so neither their bytes nor their time reach the protocol's counters.
class Meter {
 public:
  Meter(MPI_Comm world, int dim)
      : comm_(Comm::duplicate(world)), mean_(static_cast<std::size_t>(dim)), scratch_(mean_.size()) {}

  struct Inputs {
    std::span<const double> x;
    std::uint64_t bytes_sent;  // this peer's, cumulative
    GroupCounters counters;
    double step_seconds;       // this peer's time in the protocol this round
    bool stop_requested;       // this peer's view of a stop request
  };
  struct Outputs {
    RoundRow row;        // rank 0 only (time and round left to the caller)
    double step_seconds; // max over peers, rank 0 only
    bool stop;           // any peer asked to stop (all ranks)
    double variance;     // all ranks
  };

  // Sets the reference mean (round 0) for `error` and `mean_drift`.
  void set_reference(std::span<const double> x) {
    mean_of(x);
    reference_ = mean_;
  }

  Outputs measure(const Inputs& in) {
    const int n = comm_.size();
    const double nd = static_cast<double>(n) * static_cast<double>(mean_.size());
    mean_of(in.x);
    std::array<double, 2> squares{0.0, 0.0};
    for (std::size_t k = 0; k < mean_.size(); ++k) {
      const double d = in.x[k] - mean_[k];
      const double e = in.x[k] - reference_[k];
      squares[0] += d * d;
      squares[1] += e * e;
    }
    std::array<double, 2> scratch{};
    tree_sum_to_root(comm_, squares, scratch);

    // Integer counts add exactly in any order, so MPI_Reduce is deterministic here.
    std::array<std::uint64_t, 3> counts{in.bytes_sent, static_cast<std::uint64_t>(in.counters.groups),
                                        static_cast<std::uint64_t>(in.counters.failed_groups)};
    std::array<std::uint64_t, 3> count_sums{};
    check_mpi(MPI_Reduce(counts.data(), count_sums.data(), 3, MPI_UINT64_T, MPI_SUM, 0, comm_.raw()), "MPI_Reduce");
    std::array<double, 2> maxima{in.step_seconds, in.stop_requested ? 1.0 : 0.0};
    std::array<double, 2> max_out{};
    check_mpi(MPI_Reduce(maxima.data(), max_out.data(), 2, MPI_DOUBLE, MPI_MAX, 0, comm_.raw()), "MPI_Reduce");

    Outputs out{};
    std::array<double, 2> verdict{};  // variance, stop
    if (comm_.rank() == 0) {
      out.row.variance = squares[0] / nd;
      out.row.error = squares[1] / nd;
      double drift = 0.0;
      for (std::size_t k = 0; k < mean_.size(); ++k) drift += (mean_[k] - reference_[k]) * (mean_[k] - reference_[k]);
      out.row.mean_drift = drift / static_cast<double>(mean_.size());
      out.row.bytes_sent = count_sums[0];
      out.row.groups = static_cast<std::int32_t>(count_sums[1]);
      out.row.failed_groups = static_cast<std::int32_t>(count_sums[2]);
      out.step_seconds = max_out[0];
      verdict = {out.row.variance, max_out[1]};
    }
    check_mpi(MPI_Bcast(verdict.data(), 2, MPI_DOUBLE, 0, comm_.raw()), "MPI_Bcast");
    out.variance = verdict[0];
    out.stop = verdict[1] != 0.0;
    return out;
  }

  bool any_stop_request(bool mine) {
    int local = mine ? 1 : 0, any = 0;
    check_mpi(MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm_.raw()), "MPI_Allreduce");
    return any != 0;
  }

 private:
  void mean_of(std::span<const double> x) {
    std::copy(x.begin(), x.end(), mean_.begin());
    tree_sum_all(comm_, mean_, scratch_);
    for (double& m : mean_) m /= static_cast<double>(comm_.size());
  }

  Comm comm_;
  std::vector<double> mean_, scratch_, reference_;
};

}  // namespace

AveragingResult run_averaging(const AveragingOptions& raw_options, MPI_Comm world, AveragingObserver& observer) {
  const AveragingOptions options = resolve(raw_options);
  AveragingResult result;
  Meter meter(world, options.dim);
  const double min_target = options.targets.empty() ? 0.0 : options.targets.back();

  for (int k = 0; k < options.trials && !result.stopped; ++k) {
    const std::uint64_t seed = trial_seed(options.seed, k);
    Comm comm = Comm::duplicate(world);
    const int me = comm.rank();
    const int n = comm.size();
    FailureModel failures(seed, options.fail_rate, options.failure);
    auto protocol = make_protocol(options.protocol, comm);

    std::vector<double> x(static_cast<std::size_t>(options.dim));
    for (int d = 0; d < options.dim; ++d) x[static_cast<std::size_t>(d)] = initial_value(seed, me, d);
    meter.set_reference(x);

    TrialRecord trial;
    trial.index = k;
    trial.seed = seed;
    double elapsed = 0.0;

    auto measure = [&](int t, double step_seconds, GroupCounters counters) {
      const auto m = meter.measure({x, comm.traffic().bytes_sent, counters, step_seconds, observer.stop_requested()});
      if (me == 0) {
        RoundRow row = m.row;
        row.round = t;
        elapsed += m.step_seconds;
        row.time = elapsed;
        row.alive = t == 0 ? n : failures.count_alive(t, n);
        trial.rows.push_back(row);
        observer.on_round(trial, row);
      }
      return m;
    };

    auto m = measure(0, 0.0, {});
    bool stop = m.stop;
    for (int t = 1; t <= options.rounds && !stop; ++t) {
      if (options.stop_at_target && m.variance < min_target) break;
      GroupCounters counters;
      Round round{t, seed, failures, comm, counters};
      const double start = MPI_Wtime();
      protocol->step(x, round);
      const double seconds = MPI_Wtime() - start;
      m = measure(t, seconds, counters);
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
