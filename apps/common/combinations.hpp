// Flag combinations that parse and resolve but probably should not be run: each
// gives one line, which the app prints as "<program>: warning: ..." (rank 0, once)
// before the run starts. Combinations that can never work are refused by
// resolve() instead. docs/reliability.md lists both.
#pragma once

#include <string>
#include <vector>

#include "common/protocol_flags.hpp"
#include "run/averaging.hpp"
#include "sgd/trainer.hpp"

namespace avb::app {

// simulated: whether flops and detection timeouts take time here: simulated (SMPI),
// or estimated (the sequential engine, which refuses the flops flags).
std::vector<std::string> averaging_warnings(const AveragingOptions& options, const ProtocolFlags& flags,
                                            int n_peers, bool simulated);
std::vector<std::string> training_warnings(const TrainingOptions& options, const ProtocolFlags& flags, int n_peers,
                                           bool simulated);

// The share of messages between two peers holding independent N(0, 1) vectors of
// `dim` coordinates that a lattice with `q` and `eps` decodes: a coordinate decodes
// when the two differ by at most q eps / 2, and a difference is N(0, 2).
double lattice_decodable_share(double q, double eps, int dim);
// Whether decode failures are to be expected: a lattice too narrow for the N(0, 1)
// initial values of averaging_bench.
bool lattice_failures_expected(const AveragingOptions& options);

}  // namespace avb::app
