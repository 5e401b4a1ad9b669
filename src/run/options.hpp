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

// A file name as it is given ("" for none).
inline constexpr TextCodec<std::string> kFileText{
    [] { return std::string("FILE"); }, [](std::string_view text, std::string& field) { field = text; },
    [](const std::string& field) { return field; }};
// --round-timeout: a number, 0 meaning no limit.
inline constexpr RealRange kRoundTimeoutRange = [] {
  RealRange r = interval(0, 1e9);
  r.unit = " (seconds; 0: no limit)";
  return r;
}();

// The failure settings, declared once like the protocol's (protocols/options.hpp,
// core/settings.hpp), in the order --help lists them and describe_failures()
// records them. --availability names the file; the program reads it
// (RunOptions::availability). The timeouts are recorded by the runs' own
// describe() (detection-timeout) or not at all (round-timeout: it changes no value).
template <class R, class Visitor>
void for_each_failure_setting(R& o, Visitor&& v) {
  v.real("--fail-rate", o.fail_rate, interval(0, 1), "probability that a peer fails in a round, in [0, 1]", true);
  v.word("--failure", o.failure, kFailureKindNames,
         "transient (one round), permanent, churn (peers leave at --fail-rate and new ones take their slots at "
         "--join-rate, loading a live peer's state), or trace (churn on --availability's schedule)",
         true);
  v.real("--join-rate", o.join_rate, interval(0, 1),
         "churn: probability in [0, 1] per round that a departed peer's slot is taken by a new peer",
         o.failure == FailureKind::churn);
  v.custom("--availability", o.availability_path, kFileText,
           "CSV of when peers are down, one spell a line: peer,down,up in rounds (docs/failures.md); a peer back up "
           "is a new peer loading a live peer's state, as under churn. Implies --failure trace",
           o.failure == FailureKind::trace);
  v.real("--stragglers", o.stragglers.fraction, interval(0, 1),
         "probability in [0, 1] that a peer straggles: its simulated computation (--compute-flops, --step-flops) "
         "takes --straggler-slowdown times longer; SMPI only",
         true);
  v.real("--straggler-slowdown", o.stragglers.slowdown, at_least(1), "how many times slower a straggler computes, >= 1",
         true);
  v.real("--straggler-sigma", o.stragglers.sigma, interval(0, 4),
         "averaging_bench only: every peer's work of a round (--compute-flops) also takes exp(sigma z) times longer, "
         "z a standard normal drawn anew each round from the seed; 0: none",
         o.stragglers.sigma > 0);
  v.real("--detection-timeout", o.detection_timeout, at_least(0, " (seconds)"),
         "seconds before a peer notices that a peer it expected this round is down: simulated under SMPI, and "
         "recorded as the trace's detection_time column on every engine (no real sleep)",
         false);
  v.real("--round-timeout", o.round_timeout, kRoundTimeoutRange,
         "seconds a round (an SGD step) may wait for other peers on a real MPI before the run stops with an error "
         "naming the peers waited on, the trace saved as incomplete; 0: no limit. Under SMPI, SimGrid detects a "
         "deadlock itself and this is not used",
         false);
}

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
