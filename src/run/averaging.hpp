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
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"
#include "trace/trace.hpp"

namespace avb {

struct AveragingOptions {
  ProtocolOptions protocol;
  double fail_rate = 0.0;
  FailureKind failure = FailureKind::transient;
  double join_rate = 0.0;  // --join-rate, churn only
  StragglerSpec stragglers;
  // --compute-flops: the work a round stands for (local steps, say), charged before
  // each round at the host's speed times the peer's straggler factor under SMPI.
  double compute_flops = 0.0;
  // --detection-timeout: seconds a peer waits before it notices that a peer it
  // expected to hear from this round is down (docs/failures.md).
  double detection_timeout = 0.0;
  // --round-timeout: on a real MPI, seconds a round may wait for other peers
  // before the run stops with Stalled (core/watch.hpp); 0: no limit.
  double round_timeout = 300.0;
  int dim = 1;
  int rounds = 50;
  int trials = 10;
  std::uint64_t seed = 0;
  std::vector<double> targets = {1e-4, 1e-9};
  bool stop_at_target = false;
};

// The initial values are N(0, 1) (initial_value): a lattice step this large
// rounds every one of them to the lattice point 0 (|x| >= eps / 2 = 8 has
// probability 1e-15), so the run would average zeros and look converged.
inline constexpr double kMaxLatticeEps = 16;

// Checks ranges (throws ConfigError naming the flag) and resolves the protocol for
// a run on n_peers peers; refuses a --lattice-eps of kMaxLatticeEps or more.
AveragingOptions resolve(const AveragingOptions& options, int n_peers);
std::vector<std::pair<std::string, std::string>> describe(const AveragingOptions& options);
// Refuses (ConfigError naming the flag) a run whose simulated time, over all
// rounds and trials, would exceed kMaxSimulatedSeconds (sim/compute.hpp);
// slowest_speed: the slowest peer's host speed, 0 when flops are not simulated.
void check_simulated_time(const AveragingOptions& options, double slowest_speed);

// The seed of trial k: trial k of every protocol sees the same initial values and
// the same failures (common random numbers). Drawn from the run's seed by Philox,
// not seed + k, so that runs with seeds s and s+1 (a Slurm array, say) share no
// trial.
std::uint64_t trial_seed(std::uint64_t seed, int trial);

// Coordinate k of peer i's initial vector: N(0, 1) from the keyed stream, so the
// initial state is the same on every engine and for every protocol.
double initial_value(std::uint64_t trial_seed, int peer, int k);

// Called on rank 0 as results arrive; stop_requested() is polled on every rank
// once per round and the answers are combined, so all ranks stop together.
class AveragingObserver {
 public:
  virtual ~AveragingObserver() = default;
  virtual void on_round(const TrialRecord& /*trial*/, const RoundRow& /*row*/) {}
  virtual void on_trial(const TrialRecord& /*trial*/) {}
  virtual bool stop_requested() { return false; }
};

struct AveragingResult {
  std::vector<TrialRecord> trials;  // rank 0 only; the last may be incomplete
  bool stopped = false;             // a stop request cut the run short (all ranks)
};

// Runs every trial on `world` (each trial on its own duplicate of it). Collective.
AveragingResult run_averaging(const AveragingOptions& options, MPI_Comm world, AveragingObserver& observer);

// Rounds to `target` from a trial's rows: the first round whose variance is below
// it, or the cap (the number of rounds run) when none is.
TargetResult rounds_to_target(const std::vector<RoundRow>& rows, double target);

}  // namespace avb
