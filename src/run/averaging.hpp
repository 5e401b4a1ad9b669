// The averaging experiment: trials of R rounds of a protocol on vectors drawn from
// the keyed stream, measured after every round.
//
// This is what averaging_bench runs (and what sgd's trainer is to sgd_bench). It
// does not print or write files: rank 0 hands each round and trial to an observer,
// which the app turns into a table, progress and an HDF5 trace.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "protocols/protocol.hpp"
#include "protocols/time_model.hpp"
#include "run/observer.hpp"
#include "run/options.hpp"
#include "trace/trace.hpp"

namespace avb {

// The options of an averaging run: RunOptions (run/options.hpp) and these.
struct AveragingOptions : RunOptions {
  AveragingOptions() {
    trials = 10;
    targets = {1e-4, 1e-9};
  }
  // --compute-flops: the work a round stands for (local steps, say), charged before
  // each round at the host's speed times the peer's straggler factor under SMPI.
  double compute_flops = 0.0;
  int dim = 1;
  // --model-dim: messages are charged (simulated time, bytes_sent) as if vectors
  // had this many coordinates; values keep dim (core/padding.hpp). 0: dim.
  std::int64_t model_dim = 0;
  int rounds = 50;
};

// The largest --model-dim: a padded message's MPI count is an int of bytes.
inline constexpr std::int64_t kMaxModelDim = std::int64_t{1} << 27;

// The initial values are N(0, 1) (initial_value): a lattice step this large
// rounds every one of them to the lattice point 0 (|x| >= eps / 2 = 8 has
// probability 1e-15), so the run would average zeros and look converged.
inline constexpr double kMaxLatticeEps = 16;

// Checks ranges (throws ConfigError naming the flag) and resolves the protocol for
// a run on n_peers peers; refuses a --lattice-eps of kMaxLatticeEps or more. The
// result is what run_averaging takes: resolve once per run.
AveragingOptions resolve(const AveragingOptions& options, int n_peers);
std::vector<std::pair<std::string, std::string>> describe(const AveragingOptions& options);
// Refuses (ConfigError naming the flag) a run whose simulated time, over all
// rounds and trials, would exceed kMaxSimulatedSeconds (sim/compute.hpp);
// slowest_speed: the slowest peer's host speed, 0 when flops are not simulated.
void check_simulated_time(const AveragingOptions& options, double slowest_speed);

// Coordinate k of peer i's initial vector: N(0, 1) from the keyed stream, so the
// initial state is the same on every engine and for every protocol.
double initial_value(std::uint64_t trial_seed, int peer, int k);

using AveragingObserver = RunObserver<TrialRecord, RoundRow>;
using AveragingResult = RunResult<TrialRecord>;

// Runs every trial on `world` (each trial on its own duplicate of it). Collective;
// `options` come from resolve() for the size of `world` (Error otherwise).
// `platform`: the hosts the waiting policies model work on (sim/arrivals.hpp);
// on SMPI the one the run describes, elsewhere the default cluster.
AveragingResult run_averaging(const AveragingOptions& options, MPI_Comm world, AveragingObserver& observer,
                              const PlatformModel& platform = {});

// The arrivals of one trial's work on `platform` (sim/arrivals.hpp): the same on
// every engine.
Arrivals round_arrivals(const AveragingOptions& options, std::uint64_t trial_seed, const PlatformModel& platform);

// Rounds to `target` from a trial's rows: the first round whose variance is below
// it, or the cap (the number of rounds run) when none is.
TargetResult rounds_to_target(const std::vector<RoundRow>& rows, double target);

}  // namespace avb
