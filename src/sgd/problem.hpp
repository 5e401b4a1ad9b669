// The problem a training run trains on: each peer's f_i, and on rank 0 the pooled
// f, the optimum x*, f* and the test set that the measurements need.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>

#include "sgd/idx.hpp"
#include "sgd/objective.hpp"
#include "sgd/optimum.hpp"
#include "run/estimate.hpp"
#include "sgd/options.hpp"

namespace avb {

// What one peer trains on, and on rank 0 what the measurements need.
struct Problem {
  std::unique_ptr<Objective> local;   // f_i of this rank (MPI engines)
  std::vector<std::unique_ptr<Objective>> peers;  // the sequential engine: every f_i, in peer order
  // Rank 0 (and the sequential engine) only:
  std::unique_ptr<Objective> pooled;  // f = (1/N) sum_i f_i
  std::optional<Dataset> test;        // logistic: held-out samples (see test_set_kind)
  std::optional<ImageSet> test_images;  // softmax: --test-data's images, or a copy of --data's
  std::string test_set_kind;          // "synthetic-held-out", "file" or "train"
  // Every rank:
  Optimum optimum;                    // x* on every rank; loss, gradient_norm... rank 0
  double initial_loss = 0.0;          // f(x_0), rank 0
};

// Collective. Synthetic data is generated where it is needed (each rank its
// shard, rank 0 the pooled set); a LIBSVM file is read by rank 0 alone, which
// sends every rank its shard, so N ranks under SMPI hold one copy, not N.
// x* and f* are computed on rank 0 and x* is broadcast. A bad file or option
// throws the same ConfigError on every rank. `stop` is polled by each rank while
// it generates its shard, by rank 0 between the shards it deals and while it
// builds the pooled problem and its optimum; once it is set, every rank throws
// StopRequested (core/error.hpp) together, as it throws std::bad_alloc together
// when a shard does not fit where it is generated or packed.
Problem build_problem(const TrainingOptions& options, MPI_Comm world, const std::atomic<bool>* stop = nullptr);

// The sequential engine's problem: every peer's f_i in `peers` (local stays
// empty), and what rank 0 holds under MPI, built from the same data in the same
// way, so both engines train on the same bits. Throws as build_problem.
// `stop` is polled between peers and during Newton's iterations: once it is set
// the build ends with StopRequested (core/error.hpp).
Problem build_problem_sequential(const TrainingOptions& options, int n_peers, const std::atomic<bool>* stop = nullptr);

// What building and training on the problem costs, known before it is built
// (run/estimate.hpp adds it to the run's estimate).
// The held-out set of synthetic logistic data: fresh balanced samples.
inline constexpr int kHeldOutSamples = 4096;

struct ProblemCost {
  std::vector<MemoryPart> memory;  // on this machine, held for the whole run
  double trial_vectors = 0;        // sequential engine: vectors per peer of each trial in flight
  double setup_seconds = 0;        // sequential engine: the data, every f_i and the optimum
  double trial_seconds = 0;        // sequential engine: one trial's local steps and evaluations
  // The model's dimension where the options do not give it (softmax: K (d + 1)
  // from the IDX files' headers); 0 elsewhere (--dim).
  std::size_t model_dim = 0;
  // The flag that makes the model smaller: --dim, --hidden (the MLP), or none
  // (empty: a softmax's or a --data file's dimension is the data's).
  std::string model_flag = "--dim";
};

// `peers_here`: the ranks on this machine (MPI engines; rank 0, which holds the
// pooled problem, is assumed among them). The data files' sizes are read here,
// and a bad file throws the ConfigError that building the problem would: IDX
// files (softmax, MLP) announce them in their headers, a LIBSVM file is read
// through without keeping its values, and so only where it will be read
// (`reads_data`: rank 0, or the sequential engine). Elsewhere its part is left
// out: rank 0's estimate counts the shards of every rank on its machine, and the
// programs agree on one verdict for all ranks. Reading a large file takes seconds:
// `stop` (null: never) ends it with StopRequested.
ProblemCost problem_cost(const TrainingOptions& options, int n_peers, bool sequential, int peers_here,
                         bool reads_data, const std::atomic<bool>* stop = nullptr);

// The peer's shard as make_objective builds it from the whole data set, for the
// rank that holds the file (exposed for tests).
std::unique_ptr<LogisticObjective> logistic_peer(const ObjectiveOptions& options, const Dataset& data, int peer,
                                                 int n_peers, std::uint64_t seed);
// The same from the peer's rows of peer_rows (building every peer: one split, not N).
std::unique_ptr<LogisticObjective> logistic_peer(const Dataset& data, const std::vector<int>& rows, int peer);

}  // namespace avb
