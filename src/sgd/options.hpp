// The options of a training run (sgd_bench): RunOptions (run/options.hpp), the
// problem (sgd/objective.hpp) and the SGD schedule. sgd/trainer.hpp runs them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "run/options.hpp"
#include "sgd/objective.hpp"

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

// DiLoCo's outer loop (--outer-optimizer): after its H local steps from its
// anchor (its model when they began), a peer's round mixes the models as local
// SGD's does, giving m, and the peer then steps from its anchor along the
// pseudo-gradient D = anchor - m:
//   sgd       v = mu v + D,  x = anchor - lr v
//   nesterov  v = mu v + D,  x = anchor - lr (D + mu v)
// Where the peers share their anchor (all-reduce), D is the mean of their
// pseudo-gradients, DiLoCo's; mixing the models rather than the pseudo-gradients
// keeps the peers together where they do not (graphs, failures). none: local SGD.
enum class OuterOptimizer { none, sgd, nesterov };
inline constexpr EnumNames<OuterOptimizer, 3> kOuterOptimizerNames{
    "--outer-optimizer",
    {{{OuterOptimizer::none, "none"}, {OuterOptimizer::sgd, "sgd"}, {OuterOptimizer::nesterov, "nesterov"}}}};
std::string_view to_string(OuterOptimizer optimizer);

// What an outer round mixes: the models (the default: keeps the anchors together),
// or the pseudo-gradients a - x that DiLoCo sends, so that a --quantizer
// compresses the pseudo-gradient (OpenDiLoCo's and Streaming DiLoCo's low-bit
// outer gradients) rather than the model; m = a - mix(a - x).
enum class OuterMix { models, pseudo_gradients };
inline constexpr EnumNames<OuterMix, 2> kOuterMixNames{
    "--outer-mix", {{{OuterMix::models, "models"}, {OuterMix::pseudo_gradients, "pseudo-gradients"}}}};
std::string_view to_string(OuterMix mix);

struct OuterOptions {
  OuterOptimizer kind = OuterOptimizer::none;  // --outer-optimizer
  double lr = 0.7;                              // --outer-lr (DiLoCo's)
  double momentum = 0.9;                        // --outer-momentum (DiLoCo's)
  int fragments = 1;                            // --fragments (Streaming DiLoCo; sgd/outer.hpp)
  OuterMix mix = OuterMix::models;              // --outer-mix
};
// Refuses more --fragments than the model's `dim` coordinates (ConfigError).
void check_fragments(const OuterOptions& outer, long long dim);

struct LearningRate {
  LrSchedule schedule = LrSchedule::constant;  // --lr-schedule
  double lr = 0.01;                             // --lr
  int decay_steps = 100;                        // --lr-decay-steps (T)
  double decay_factor = 0.5;                    // --lr-decay-factor (step only)

  double at(std::int64_t step) const;
};

struct TrainingOptions : RunOptions {
  // round_timeout applies per SGD step; the stragglers scale --step-flops per peer.
  TrainingOptions() {
    trials = 1;
    // Relative gap targets (f(x_bar) - f*) / (f(x_0) - f*); steps to each are reported.
    targets = {1e-3, 1e-6};
  }
  ObjectiveOptions objective;
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
  // --gradient-tracking (DSGT / DIGing, adapt then combine): each peer also holds a
  // tracker z_i of the mean gradient. A step: z_i += g_i(x_i) - g_i(previous x_i),
  // x_i -= lr z_i; the round then mixes (x_i, z_i) together, so the protocol's
  // vectors are twice the model. Needs --local-steps 1, --momentum 0 and rounds
  // that keep the peers' sum (ProtocolInfo::tracking_refusal).
  bool gradient_tracking = false;
  OuterOptions outer;     // --outer-optimizer, --outer-lr, --outer-momentum
  int eval_every = 10;    // --eval-every
  std::string test_data;  // --test-data: LIBSVM file for the accuracy column
};

// The largest constant --lr at which heavy-ball SGD with --momentum b is stable on
// a quadratic of curvature L: 2 (1 + b) / L (beyond it the iteration's
// eigenvalues leave the unit disc and the error grows every step). L is the
// largest curvature of any peer's f_i: a peer's local steps see its own
// Hessian, and averaging must undo their growth at every round. Only allreduce
// with --local-steps 1 averages exactly after every step, which makes each step
// one on the pooled problem (AR-SGD): L is the pooled curvature there. nullopt
// when L is not known before the run (logistic: quadratic_curvature).
std::optional<double> stable_lr_bound(const TrainingOptions& options, int n_peers);

// Range checks (ConfigError naming the flag); resolves the protocol and objective.
// The result is what build_problem and run_training take: resolve once per run.
TrainingOptions resolve(const TrainingOptions& options, int n_peers);
std::vector<std::pair<std::string, std::string>> describe(const TrainingOptions& options);
// As averaging's check_simulated_time: --step-flops per step, --detection-timeout
// per round, over all steps and trials.
void check_simulated_time(const TrainingOptions& options, double slowest_speed);

}  // namespace avb
