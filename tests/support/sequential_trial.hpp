// One trial on the sequential engine, for the tests that hold a protocol to its
// theory (exact means, contraction against the spectral gap, finite-time
// consensus, byte counts): what they assert comes from the theory, not from
// another model of the protocol. The MPI form is held to the same rows by
// tests/mpi/test_protocol_forms.cpp.
#pragma once

#include "run/averaging.hpp"
#include "run/sequential.hpp"

namespace avb::test {

// Trial `trial` of `options`, resolved here for n peers, as the sequential engine
// records it (its time column is the engine's estimate).
inline TrialRecord sequential_trial(const AveragingOptions& options, int n, int trial) {
  return run_sequential_trial(resolve(options, n), n, trial);
}

}  // namespace avb::test
