// The sequential oracle: the same protocols on an N x D matrix in one process, fed
// by the same keyed streams. MPI runs must agree with it (tests/mpi).
//
// It is written for clarity, not speed: plain loops, plain sums in peer order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <optional>
#include <vector>

#include "protocols/protocol.hpp"
#include "run/averaging.hpp"
#include "sim/failures.hpp"
#include "trace/trace.hpp"

namespace avb::oracle {

using Matrix = std::vector<std::vector<double>>;  // [peer][coordinate]

Matrix initial_state(std::uint64_t trial_seed, int n, int dim);

// Churn: at the start of round t each joiner takes its donor's values (what
// sim/churn.hpp's load_joiners does across ranks); returns the bytes sent.
std::uint64_t apply_joins(const FailureModel& failures, int t, Matrix& x);

// One round of `protocol` (resolved) on the whole population; updates x and the
// round's group counters. Bytes are the protocol's exact traffic for the round.
struct RoundEffect {
  int groups = 0;
  int failed_groups = 0;
  int decode_failures = 0;  // quantized gossip and pairwise: messages that did not decode
  std::uint64_t bytes = 0;
};
// What protocols keep across the rounds of one trial (moshpit: the placement and,
// for chunk keys, every peer's key). Start each trial with an empty one.
struct TrialState {
  std::uint64_t seed = 0;
  std::vector<std::int64_t> cell;
  std::vector<std::vector<int>> key;
  // pushsum: each peer's mass (x then w) and the x/w the last round left it (the
  // caller's changes since then are added to the numerator); graph protocols: the
  // trial's graph.
  Matrix mass;
  Matrix last;
  std::optional<Topology> topology;
  // choco: every peer's public copy x̂, the last round it updated it, and the
  // last round it sent to each receiver.
  Matrix public_copy;
  std::vector<int> updated;
  std::vector<std::map<int, int>> sent;
};
// `seed` is the trial's seed (Round::seed); `state` starts empty for each trial.
RoundEffect step(const ProtocolOptions& protocol, const FailureModel& failures, std::uint64_t seed, int t, Matrix& x,
                 TrialState& state);
// For stateless protocols that ignore the seed (allreduce).
RoundEffect step(const ProtocolOptions& protocol, const FailureModel& failures, int t, Matrix& x);

// Metrics as DESIGN.md defines them, with `reference` the initial mean.
RoundRow measure(const Matrix& x, const std::vector<double>& reference);
std::vector<double> mean(const Matrix& x);

// A whole trial, as run_averaging records it (time left 0).
TrialRecord run_trial(const AveragingOptions& options, int n, int trial);

}  // namespace avb::oracle
