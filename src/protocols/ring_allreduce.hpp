// Bandwidth-optimal ring all-reduce over any communicator, point to point.
//
// Reduce-scatter then all-gather, n-1 steps each, with the vector cut into n
// near-equal chunks: every rank sends 2(n-1)/n of the vector in all, the minimum
// for an all-reduce. Works for any size (1, 2, primes) and any length, including
// vectors shorter than the ring (some chunks are then empty). The order of
// additions depends only on the communicator size, so results are reproducible.
#pragma once

#include <span>
#include <vector>

#include "core/comm.hpp"

namespace avb {

class RingAllreduce {
 public:
  // Sums x over all ranks of comm, in place; every rank ends with identical bits.
  void sum(Comm& comm, std::span<double> x);
  // The mean over all ranks, in place (each chunk is divided by n by its owner
  // before the all-gather, so every rank again holds identical bits).
  void average(Comm& comm, std::span<double> x);

 private:
  void run(Comm& comm, std::span<double> x, bool divide);
  std::vector<double> incoming_;  // reused between calls: no allocation per round
};

}  // namespace avb
