// Bandwidth-optimal ring all-reduce over any communicator, point to point.
//
// Reduce-scatter then all-gather, n-1 steps each, with the vector cut into n
// near-equal chunks: every rank sends 2(n-1)/n of the vector in all, the minimum
// for an all-reduce. Works for any size (1, 2, primes) and any length, including
// vectors shorter than the ring (some chunks are then empty). The order of
// additions depends only on the communicator size, so results are reproducible.
//
// Chunks larger than the segment size are sent as several messages that are
// pipelined through the steps (docs/performance.md: what it gains); the segment
// size changes messages and timing, never the bits of the result.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <span>
#include <vector>

#include "core/comm.hpp"

namespace avb {

class RingAllreduce {
 public:
  // Doubles per message: 64 Ki (512 KiB), large enough that per-message costs
  // vanish and small enough to keep a segment in L2 while it is reduced.
  static constexpr std::size_t kDefaultSegment = std::size_t{1} << 16;

  // segment_doubles = 0: one message per chunk (no pipelining).
  explicit RingAllreduce(std::size_t segment_doubles = kDefaultSegment) : segment_(segment_doubles) {}

  // Sums x over all ranks of comm, in place; every rank ends with identical bits.
  void sum(Comm& comm, std::span<double> x);
  // The mean over all ranks, in place (each chunk is divided by n by its owner
  // before the all-gather, so every rank again holds identical bits).
  void average(Comm& comm, std::span<double> x);

 private:
  struct Plan;
  void run(Comm& comm, std::span<double> x, bool divide);
  // Stage t of the 2(n-1): receive (and reduce) one chunk, forward it segment by segment.
  void run_stage(Comm& comm, std::span<double> x, const Plan& plan, int t, bool divide);
  std::size_t segment_;
  // Reused between calls: no allocation per round.
  std::vector<double> incoming_;  // one slot per segment of a chunk
  std::vector<MPI_Request> recvs_, sends_, next_sends_;
};

}  // namespace avb
