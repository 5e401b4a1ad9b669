// The sequential oracle of the local-SGD trainer (src/sgd/trainer.hpp): every
// peer's model in one process, plain loops, the protocols by the averaging oracle,
// and the measurements computed here from the pooled objective rather than by the
// trainer's reduction. MPI runs of run_training must agree with it (tests/mpi).
#pragma once

#include <cstdint>
#include <vector>

#include "averaging_oracle.hpp"
#include "sgd/objective.hpp"
#include "sgd/trainer.hpp"
#include "trace/trace.hpp"

namespace avb::oracle {

struct TrainingOutcome {
  TrainingTrial trial;  // the rows and targets run_training records (time left 0)
  Matrix models;        // every peer's x_i at the end of the trial
};

// Trial `trial` of a run on n peers. `data` is the LIBSVM file already read (null:
// synthetic data, or make_objective reads options.objective.data_path itself).
TrainingOutcome run_training_trial(const TrainingOptions& options, int n, int trial, const Dataset* data = nullptr);

// Centralized minibatch SGD with momentum on the pooled problem, from x = 0:
//   v <- momentum v + (1/N) sum_i g_i(x),  x <- x - lr(s) v
// with g_i peer i's stochastic_gradient(x, B, trial seed, s). What allreduce with
// H = 1 and no failures computes on every peer.
std::vector<double> centralized_sgd(const TrainingOptions& options, int n, int trial, const Dataset* data = nullptr);

}  // namespace avb::oracle
