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
// Measurement (run/stats.hpp): rank 0 holds the pooled f. One reduction on a
// communicator of its own brings sum_i x_i, sum_i (x_i - x*) and
// sum_i ||x_i - x*||^2 to rank 0, which evaluates f(x_bar) on the pooled problem;
// neither its bytes nor its time are counted. Shifting by x* keeps the distance,
// gap and consensus exact to rounding of the distance to x*, not of ||x*||.
#pragma once

#include <vector>

#include <mpi.h>

#include "run/observer.hpp"
#include "sgd/options.hpp"
#include "sgd/problem.hpp"
#include "trace/trace.hpp"

namespace avb {

// How many local steps peer `me` takes before its round r (1-based) of the trial
// with seed `seed`: H, or under geometric a draw keyed by (r, me).
int local_steps_before(const TrainingOptions& options, std::uint64_t seed, int me, int r);

using TrainingObserver = RunObserver<TrainingTrial, TrainingRow>;

struct TrainingResult : RunResult<TrainingTrial> {
  std::vector<double> model;  // this rank's x_i at the end of the last trial
};

TrainingResult run_training(const TrainingOptions& options, const Problem& problem, MPI_Comm world,
                            TrainingObserver& observer);

// First row whose relative gap is at or below `target`, or the cap (steps run).
TargetResult steps_to_target(const std::vector<TrainingRow>& rows, double target);

}  // namespace avb
