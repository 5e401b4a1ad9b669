// Local SGD with any averaging protocol: what sgd_bench runs.
//
// Peer i of N holds f_i and its own model x_i. One trial, with s the 0-based step:
//
//   x_i = 0, v_i = 0 on every peer
//   for s = 0 .. steps-1:
//     r = s / H + 1                          the averaging round this step leads to
//     if peer i is up in round r:            (a peer down in round r sits out the
//       g   = stochastic_gradient(x_i, B, trial seed, s)   steps before it as well)
//       v_i = momentum * v_i + g
//       x_i = x_i - lr(s) * v_i
//     if (s + 1) % H == 0: one round r of the protocol on x_i
//     after step s+1, every --eval-every steps and after the last: measure
//
// H = 1 with allreduce is AR-SGD (minibatch SGD on the pooled problem with batch
// N*B), gossip every step is D-PSGD, moshpit every H steps is Moshpit SGD. The
// momentum buffer stays local (it is not averaged). Push-sum keeps its weights
// inside the protocol; it adds the change a peer made to its model since the last
// round to its numerator, which for H = 1 is exactly SGP (Assran et al. 2019).
//
// Randomness: the problem (data, b_i) is keyed by the run's seed, so every trial
// and every protocol trains on the same problem and x*, f* are computed once;
// minibatches and failures are keyed by the trial's seed (common random numbers
// across protocols, as in averaging_bench).
//
// Measurement (DESIGN.md, idea 5): rank 0 holds the pooled f. One reduction on a
// communicator of its own brings sum_i x_i, sum_i (x_i - x*) and
// sum_i ||x_i - x*||^2 to rank 0, which evaluates f(x_bar) on the pooled problem;
// neither its bytes nor its time are counted. Shifting by x* keeps the distance,
// gap and consensus exact to rounding of the distance to x*, not of ||x*||.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mpi.h>

#include "core/enum_names.hpp"
#include "protocols/protocol.hpp"
#include "sgd/objective.hpp"
#include "sim/stragglers.hpp"
#include "sgd/optimum.hpp"
#include "sim/failures.hpp"
#include "trace/trace.hpp"

namespace avb {

// lr(s) for the 0-based step s, with T = decay_steps:
//   constant  lr
//   inverse   lr * T / (s + T)        (a / (s + b) with a = lr * T, b = T)
//   step      lr * factor^floor(s / T)
enum class LrSchedule { constant, inverse, step };
inline constexpr EnumNames<LrSchedule, 3> kLrScheduleNames{
    "--lr-schedule",
    {{{LrSchedule::constant, "constant"},
     {LrSchedule::inverse, "inverse"},
     {LrSchedule::step, "step"}}}};
LrSchedule parse_lr_schedule(std::string_view name);  // throws ConfigError (--lr-schedule)
std::string_view to_string(LrSchedule schedule);

// How many local steps a peer takes between its rounds.
enum class LocalStepsDist {
  fixed,      // H every time
  geometric,  // geometric with mean H, drawn per peer and round (asynchronous protocols only)
};
inline constexpr EnumNames<LocalStepsDist, 2> kLocalStepsDistNames{
    "--local-steps-dist", {{{LocalStepsDist::fixed, "fixed"}, {LocalStepsDist::geometric, "geometric"}}}};
LocalStepsDist parse_local_steps_dist(std::string_view name);  // throws ConfigError (--local-steps-dist)
std::string_view to_string(LocalStepsDist dist);

struct TrainingOptions;
// How many local steps peer `me` takes before its round r (1-based) of the trial
// with seed `seed`: H, or under geometric a draw keyed by (r, me).
int local_steps_before(const TrainingOptions& options, std::uint64_t seed, int me, int r);

struct LearningRate {
  LrSchedule schedule = LrSchedule::constant;  // --lr-schedule
  double lr = 0.01;                             // --lr
  int decay_steps = 100;                        // --lr-decay-steps (T)
  double decay_factor = 0.5;                    // --lr-decay-factor (step only)

  double at(std::int64_t step) const;
};

struct TrainingOptions {
  ProtocolOptions protocol;
  ObjectiveOptions objective;
  double fail_rate = 0.0;
  FailureKind failure = FailureKind::transient;
  double join_rate = 0.0;    // --join-rate, churn only
  StragglerSpec stragglers;  // scales --step-flops per peer
  double detection_timeout = 0.0;  // --detection-timeout (averaging.hpp)
  double round_timeout = 300.0;    // --round-timeout (averaging.hpp), per SGD step
  int steps = 1000;       // --steps
  int local_steps = 1;    // --local-steps (H)
  LocalStepsDist local_steps_dist = LocalStepsDist::fixed;  // --local-steps-dist
  // --step-flops: the simulated cost of one local step. Under SMPI each step charges
  // this many flops at its host's speed (computation is not simulated otherwise);
  // nothing on a real MPI.
  double step_flops = 0.0;
  int batch = 1;          // --batch (B), per peer and step
  LearningRate lr;
  double momentum = 0.0;  // --momentum, in [0, 1)
  int eval_every = 10;    // --eval-every
  int trials = 1;
  std::uint64_t seed = 0;
  // Relative gap targets (f(x_bar) - f*) / (f(x_0) - f*); steps to each are reported.
  std::vector<double> targets = {1e-3, 1e-6};
  bool stop_at_target = false;
  std::string test_data;  // --test-data: LIBSVM file for the accuracy column
};

// Range checks (ConfigError naming the flag); resolves the protocol and objective.
TrainingOptions resolve(const TrainingOptions& options, int n_peers);
std::vector<std::pair<std::string, std::string>> describe(const TrainingOptions& options);
// As averaging's check_simulated_time: --step-flops per step, --detection-timeout
// per round, over all steps and trials.
void check_simulated_time(const TrainingOptions& options, double slowest_speed);

// What one peer trains on, and on rank 0 what the measurements need.
struct Problem {
  std::unique_ptr<Objective> local;   // f_i of this rank
  // Rank 0 only:
  std::unique_ptr<Objective> pooled;  // f = (1/N) sum_i f_i
  std::optional<Dataset> test;        // logistic: held-out samples (see test_set_kind)
  std::string test_set_kind;          // "synthetic-held-out", "file" or "train"
  // Every rank:
  Optimum optimum;                    // x* on every rank; loss, gradient_norm... rank 0
  double initial_loss = 0.0;          // f(x_0), rank 0
};

// Collective. Synthetic data is generated where it is needed (each rank its
// shard, rank 0 the pooled set); a LIBSVM file is read by rank 0 alone, which
// sends every rank its shard, so N ranks under SMPI hold one copy, not N.
// x* and f* are computed on rank 0 and x* is broadcast. A bad file or option
// throws the same ConfigError on every rank.
Problem build_problem(const TrainingOptions& options, MPI_Comm world);

// The peer's shard as make_objective builds it from the whole data set, for the
// rank that holds the file (exposed for tests).
std::unique_ptr<LogisticObjective> logistic_peer(const ObjectiveOptions& options, const Dataset& data, int peer,
                                                 int n_peers, std::uint64_t seed);

class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void on_eval(const TrainingTrial& /*trial*/, const TrainingRow& /*row*/) {}
  virtual void on_trial(const TrainingTrial& /*trial*/) {}
  virtual bool stop_requested() { return false; }
};

struct TrainingResult {
  std::vector<TrainingTrial> trials;  // rank 0 only; the last may be incomplete
  bool stopped = false;               // all ranks
  std::vector<double> model;          // this rank's x_i at the end of the last trial
};

// Runs every trial on `world` (each on its own duplicate). Collective; `problem`
// comes from build_problem with the same options.
TrainingResult run_training(const TrainingOptions& options, const Problem& problem, MPI_Comm world,
                            TrainingObserver& observer);

// First row whose relative gap is at or below `target`, or the cap (steps run).
TargetResult steps_to_target(const std::vector<TrainingRow>& rows, double target);

}  // namespace avb
