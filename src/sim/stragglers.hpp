// Stragglers: peers whose computation is slower by a fixed factor (docs/failures.md,
// time realism). Which peers straggle is keyed by (trial seed, peer), like failures,
// so every protocol meets the same stragglers in the same trial. The factor scales
// the work a run charges as simulated time (--compute-flops, --step-flops): it acts
// under SMPI only, since on a real MPI nothing is charged and the machine has its
// own stragglers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.hpp"

namespace avb {

struct StragglerSpec {
  double fraction = 0.0;  // --stragglers: probability that a peer straggles, in [0, 1]
  double slowdown = 4.0;  // --straggler-slowdown: how many times slower, >= 1
  // --straggler-sigma: every peer's work of a round is also slowed by exp(sigma z),
  // z a standard normal keyed by (trial seed, round, peer) (sim/arrivals.hpp).
  double sigma = 0.0;
};


class Stragglers {
 public:
  Stragglers(std::uint64_t trial_seed, const StragglerSpec& spec) : stream_(trial_seed, StreamId::stragglers), spec_(spec) {}

  // The slow-down of `peer`'s computation: spec.slowdown for a straggler, else 1.
  double factor(int peer) const {
    if (spec_.fraction <= 0.0) return 1.0;
    return stream_.uniform(0, static_cast<std::uint64_t>(peer), 0) < spec_.fraction ? spec_.slowdown : 1.0;
  }

 private:
  Stream stream_;
  StragglerSpec spec_;
};

}  // namespace avb
