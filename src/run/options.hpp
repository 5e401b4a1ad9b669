// The options every run has, averaging (run/averaging.hpp) or training
// (sgd/options.hpp): the protocol, the failures, the trials and the targets.
// Each kind of run derives its options from RunOptions and adds its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocols/protocol.hpp"
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"

namespace avb {

struct RunOptions {
  ProtocolOptions protocol;
  double fail_rate = 0.0;
  FailureKind failure = FailureKind::transient;
  double join_rate = 0.0;  // --join-rate, churn only
  // --availability, the schedule of --failure trace: read once per run and shared
  // by every trial (and every rank of a process); /config records its path.
  std::shared_ptr<const Availability> availability;
  std::string availability_path;
  StragglerSpec stragglers;
  // --detection-timeout: seconds a peer waits before it notices that a peer it
  // expected to hear from this round is down (docs/failures.md).
  double detection_timeout = 0.0;
  // --round-timeout: on a real MPI, seconds a round (or SGD step) may wait for
  // other peers before the run stops with Stalled (core/watch.hpp); 0: no limit.
  double round_timeout = 300.0;
  int trials = 1;
  std::uint64_t seed = 0;
  std::vector<double> targets;  // sorted decreasing and deduplicated by resolve()
  bool stop_at_target = false;
  // Set by resolve(): the number of peers the options were checked and completed
  // for; 0 until then. The runs take resolved options only (require_resolved),
  // so resolve() runs once per run, not again in every layer or trial.
  int resolved_for = 0;
};

// The checks and defaults of the common options, for a run of `n_peers` peers
// (ConfigError naming the flag); `training` selects sgd_bench's churn rules.
void resolve_run(RunOptions& options, int n_peers, bool training);

// The failures of one trial (seed: trial_seed()) of a run of `n_peers` peers.
FailureModel trial_failures(const RunOptions& options, std::uint64_t seed, int n_peers);

// Whether any peer can fail in this run: a positive --fail-rate, or a trace.
bool failures_possible(const RunOptions& options);

// Throws Error when `options` did not come from resolve() for `n_peers` peers.
void require_resolved(const RunOptions& options, int n_peers, const char* where);

// (key, value) pairs of describe(): the failure model (fail-rate, failure,
// join-rate under churn, the stragglers) and the trial set-up (trials, seed,
// target, stop-at-target), each in the order the traces record them.
using Described = std::vector<std::pair<std::string, std::string>>;
void describe_failures(const RunOptions& options, Described& out);
void describe_trials(const RunOptions& options, Described& out);

// Throws ConfigError "<flag>: <value> is not <accepted>" unless `ok`.
void require(bool ok, const std::string& flag, double value, const std::string& accepted);

// The seed of trial k: trial k of every protocol sees the same initial values and
// the same failures (common random numbers). Drawn from the run's seed by Philox,
// not seed + k, so that runs with seeds s and s+1 (a Slurm array, say) share no
// trial.
std::uint64_t trial_seed(std::uint64_t seed, int trial);

}  // namespace avb
