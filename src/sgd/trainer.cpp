#include "sgd/trainer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <span>

#include "core/comm.hpp"
#include "core/rng.hpp"
#include "core/watch.hpp"
#include "run/skeleton.hpp"
#include "run/stats.hpp"
#include "sgd/metrics.hpp"
#include "sgd/outer.hpp"
#include "sim/churn.hpp"
#include "sim/compute.hpp"

namespace avb {

// Geometric: P(k) = p(1 - p)^(k - 1), p = 1/H, by inversion of one keyed uniform.
int local_steps_before(const TrainingOptions& o, std::uint64_t seed, int me, int r) {
  if (o.local_steps_dist == LocalStepsDist::fixed || o.local_steps == 1) return o.local_steps;
  const double u = Stream(seed, StreamId::local_steps)
                       .uniform_open0(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(me), 0);
  const double k = 1.0 + std::floor(std::log(u) / std::log1p(-1.0 / o.local_steps));
  return static_cast<int>(std::min(k, 1e9));
}

TargetResult steps_to_target(const std::vector<TrainingRow>& rows, double target) {
  TargetResult result{target, rows.empty() ? 0 : rows.back().step, false};
  for (const TrainingRow& row : rows)
    if (row.relative_gap <= target) return {target, row.step, true};
  return result;
}

namespace {

// One StatsReduction per evaluation (see trainer.hpp): each peer's x - x* and x.
class TrainingMeter {
 public:
  TrainingMeter(MPI_Comm world, const Problem& problem)
      : problem_(problem), dim_(static_cast<std::size_t>(problem.local->dim())), stats_(world, 2 * dim_) {
    if (stats_.comm().rank() == 0) metrics_ = std::make_unique<TrainingMetrics>(problem);
  }

  void set_watch(Watch* watch) { stats_.set_watch(watch); }

  struct Outputs {
    TrainingRow row;            // rank 0 (step, round, alive, time are the caller's)
    double seconds = 0;         // the interval's duration, rank 0
    double relative_gap = 0.0;  // all ranks
    bool stop = false;          // all ranks
    bool diverged = false;      // all ranks: TrainingMetrics::diverged (not finite, or far out)
  };

  // `tally.squares` is filled here.
  Outputs measure(const Eigen::VectorXd& x, PeerTally tally) {
    const std::span<double> sums = stats_.vector();
    for (std::size_t k = 0; k < dim_; ++k) {
      const auto e = static_cast<Eigen::Index>(k);
      sums[k] = x[e] - problem_.optimum.x[e];
      sums[dim_ + k] = x[e];
      tally.squares += sums[k] * sums[k];
    }
    Outputs out;
    const auto verdict = stats_.measure(tally, [&](const Totals& totals) {
      out.row = metrics_->row(sums, totals.squares, n_peers_);
      totals.copy_counters_to(out.row);
      out.seconds = totals.seconds;
      const TrainingRow& r = out.row;
      const bool diverged = metrics_->diverged(r, totals.squares);
      return std::array<double, 3>{r.relative_gap, totals.stop_requested ? 1.0 : 0.0, diverged ? 1.0 : 0.0};
    });
    out.relative_gap = verdict[0];
    out.stop = verdict[1] != 0.0;
    out.diverged = verdict[2] != 0.0;
    return out;
  }

 private:
  const Problem& problem_;
  std::size_t dim_;
  StatsReduction stats_;
  const int n_peers_ = stats_.comm().size();
  std::unique_ptr<TrainingMetrics> metrics_;  // rank 0 only
};

// One trial of local SGD (the loop of trainer.hpp) on a Trial of the skeleton.
class SgdTrial {
 public:
  SgdTrial(const TrainingOptions& options, const Problem& problem, TrainingMeter& meter, TrainingObserver& observer,
           Watch& watch, Trial& trial, TrainingTrial& record)
      : o_(options), f_(*problem.local), meter_(meter), observer_(observer), watch_(watch), trial_(trial),
        record_(record), d_(f_.dim()), x_(Eigen::VectorXd::Zero(options.gradient_tracking ? 2 * d_ : d_)),
        velocity_(Eigen::VectorXd::Zero(d_)), g_(d_),
        anchor_(Eigen::VectorXd::Zero(outer() ? d_ : 0)), outer_velocity_(Eigen::VectorXd::Zero(outer() ? d_ : 0)),
        slowdown_(trial.stragglers.factor(trial.me)) {}

  // Returns whether a stop request was seen; fills the record's flags and targets.
  bool run() {
    // Streaming DiLoCo: a protocol of its own for each further fragment.
    for (int f = 1; outer() && f < o_.outer.fragments; ++f) more_.push_back(make_protocol(o_.protocol, trial_.comm));
    for_each_part([&](Protocol& p, std::span<double> part) { p.begin_trial(part, trial_.seed); });
    double start = MPI_Wtime();
    evaluate(0, start, start);
    start = MPI_Wtime();
    int done = 0;  // steps run
    until_ = local_steps_before(o_, trial_.seed, trial_.me, r_);
    for (int s = 0; s < o_.steps && !stop_ && !reached_ && !diverged_; ++s) {
      watch_.start(trial_.index, "step", s + 1);
      local_step(s);
      done = s + 1;
      if ((s + 1) % o_.eval_every == 0 || s + 1 == o_.steps) {
        for_each_part([&](Protocol& p, std::span<double> part) { p.settle(part, since_eval_); });
        evaluate(s + 1, start, MPI_Wtime());
        start = MPI_Wtime();
      }
    }
    // A stop seen at the last evaluation cuts nothing short.
    record_.complete = !stop_ || done == o_.steps;
    record_.diverged = diverged_;
    for (double target : o_.targets) record_.targets.push_back(steps_to_target(record_.rows, target));
    return stop_;
  }

  // The model (under --gradient-tracking, x_ holds the tracker after it).
  std::span<const double> x() const { return {x_.data(), static_cast<std::size_t>(d_)}; }

 private:
  // What the protocol averages: the model, and under --gradient-tracking its tracker too.
  std::span<double> model() { return {x_.data(), static_cast<std::size_t>(x_.size())}; }
  bool outer() const { return o_.outer.kind != OuterOptimizer::none; }
  // The part of the model round r mixes (all of it but under --fragments), and its protocol.
  Fragment fragment(int r) const { return round_fragment(o_.outer, r, static_cast<std::size_t>(x_.size())); }
  Protocol& protocol(int f) { return f == 0 ? *trial_.protocol : *more_[static_cast<std::size_t>(f - 1)]; }
  template <class Visit>
  void for_each_part(Visit visit) {
    for (int f = 0; f <= static_cast<int>(more_.size()); ++f) {
      const Fragment part = fragment(f + 1);
      visit(protocol(f), model().subspan(part.begin, part.size));
    }
  }

  // Step s (0-based): churn joiners, the gradient step of a live peer, the
  // protocol's progress and, after this peer's local steps, its round.
  void local_step(int s) {
    // Churn: a new peer joins at the start of the steps that lead to its first
    // round, with a live peer's model and no momentum.
    if (since_ == 0 && load_joiners(trial_.comm, trial_.failures, r_, model())) {
      velocity_.setZero();
      outer_velocity_.setZero();
      if (outer()) anchor_ = x_.head(d_);  // its local steps start from the model it took
      for_each_part([&](Protocol& p, std::span<double> part) { p.on_join(part); });
    }
    if (trial_.failures.alive(r_, trial_.me)) {
      auto x = x_.head(d_);
      f_.stochastic_gradient(x, o_.batch, trial_.seed, static_cast<std::uint64_t>(s), g_);
      if (o_.gradient_tracking) {  // velocity_ holds the previous gradient (momentum is 0)
        auto z = x_.tail(d_);
        z += g_ - velocity_;
        velocity_ = g_;
        x -= o_.lr.at(s) * z;
      } else {
        velocity_ = o_.momentum * velocity_ + g_;
        x -= o_.lr.at(s) * velocity_;
      }
      charge_flops(o_.step_flops * slowdown_);  // under SMPI: the step's simulated cost on this host
    }
    for_each_part([&](Protocol& p, std::span<double> part) { p.progress(part); });  // asynchronous: serve, publish x
    if (++since_ == until_) round();
  }

  // This peer's round r: after `until_` local steps (H, or geometric with mean H).
  void round() {
    GroupCounters counters;
    Round round{r_, trial_.seed, trial_.failures, trial_.comm, counters};
    const Fragment part = fragment(r_);
    const std::span<double> mixed = model().subspan(part.begin, part.size);
    const auto anchor = outer() ? std::span<const double>(anchor_.data() + part.begin, part.size)
                                : std::span<const double>();
    swap_pseudo_gradient(o_.outer, mixed, anchor);
    protocol(part.index).step(mixed, round);
    swap_pseudo_gradient(o_.outer, mixed, anchor);
    // A peer down in this round took no steps and takes no outer step.
    if (outer())
      outer_step(o_.outer, mixed, std::span<double>(anchor_.data() + part.begin, part.size),
                 std::span<double>(outer_velocity_.data() + part.begin, part.size), trial_.failures.alive(r_, trial_.me));
    since_eval_ += counters;
    trial_.charge_detection(counters, o_.detection_timeout);
    rounds_done_ = r_;
    ++r_;
    since_ = 0;
    until_ = local_steps_before(o_, trial_.seed, trial_.me, r_);
  }

  // Measures after `step` steps; rank 0 records the row and hands it on.
  void evaluate(int step, double start, double end) {
    const auto m = meter_.measure(x_, {0.0, trial_.comm.traffic().bytes_sent, since_eval_, start, end,
                                       observer_.stop_requested(), trial_.detection});
    since_eval_ = {};
    if (trial_.me == 0) {
      TrainingRow row = m.row;
      row.step = step;
      row.round = rounds_done_;
      trial_.stamp(row, rounds_done_, m.seconds);
      record_.rows.push_back(row);
      observer_.on_row(record_, row);
    }
    stop_ = m.stop;
    reached_ = o_.stop_at_target && m.relative_gap <= o_.targets.back();
    // Divergence is looked for after steps only: x_0 = 0 is where build_problem
    // measured f(x_0).
    diverged_ = step > 0 && m.diverged;
  }

  const TrainingOptions& o_;
  const Objective& f_;
  TrainingMeter& meter_;
  TrainingObserver& observer_;
  Watch& watch_;
  Trial& trial_;
  TrainingTrial& record_;
  const Eigen::Index d_;
  Eigen::VectorXd x_, velocity_, g_;
  Eigen::VectorXd anchor_, outer_velocity_;  // --outer-optimizer: where the local steps start, the outer momentum
  std::vector<std::unique_ptr<Protocol>> more_;  // --fragments: the protocols of fragments 1 .. F - 1
  const double slowdown_;
  GroupCounters since_eval_;
  int rounds_done_ = 0;
  int r_ = 1, since_ = 0, until_ = 0;  // this peer's next round, steps taken towards it, steps it needs
  bool stop_ = false, reached_ = false;
  bool diverged_ = false;  // TrainingMetrics::diverged at an evaluation: the trial ends there
};

}  // namespace

TrainingResult run_training(const TrainingOptions& options, const Problem& problem, MPI_Comm world,
                            TrainingObserver& observer) {
  require_resolved(options, world_size(world), "run_training");
  TrainingResult result;
  Watch watch(world, options.round_timeout);
  TrainingMeter meter(world, problem);
  meter.set_watch(&watch);
  result.stopped = run_trials(options, world, watch, "step", observer, result.trials,
                              [&](Trial& trial, TrainingTrial& record) {
                                SgdTrial sgd(options, problem, meter, observer, watch, trial, record);
                                const bool stop = sgd.run();
                                result.model.assign(sgd.x().begin(), sgd.x().end());
                                return stop;
                              });
  return result;
}

}  // namespace avb
