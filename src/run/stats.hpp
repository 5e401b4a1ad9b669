// The measurement reduction shared by averaging and training: after a round (or
// an evaluation) every peer contributes a vector of its own (summed over peers)
// and a PeerTally of named fields; rank 0 gets the sums and the Totals.
//
// One tree reduction on a communicator of its own, so neither its bytes nor its
// time reach the protocol's counters. Counters are summed (counts below 2^53 add
// exactly in doubles; bytes_sent travels as two 32-bit halves, so its sum is exact
// for any total below 2^64 on up to 2^21 peers); times and flags take the maximum
// over peers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <mpi.h>

#include "core/comm.hpp"
#include "protocols/protocol.hpp"

namespace avb {

// What one peer adds to a measurement besides its vector.
struct PeerTally {
  double squares = 0.0;            // this peer's squared distance to the run's reference
  std::uint64_t bytes_sent = 0;    // this peer's, cumulative
  GroupCounters counters;          // since the previous measurement
  double start = 0.0;              // MPI_Wtime() when this peer began the interval
  double end = 0.0;                // and when it ended it
  bool stop_requested = false;     // this peer's view of a stop request
  double detection_seconds = 0.0;  // failure detection charged to this peer, cumulative
};

// The tallies of all peers, on rank 0.
struct Totals {
  double squares = 0.0;  // sum over peers
  std::uint64_t bytes_sent = 0;
  RoundReport counts;           // summed over peers
  double detection_time = 0.0;  // max over peers
  // The interval's duration: from the moment the last peer entered it to the
  // moment the last peer left it. Peers leave the previous measurement at
  // different times, and an early peer's own duration includes waiting for the
  // rest: counting that would let measurement disturb the time column. Needs one
  // clock for all peers (SMPI's simulated clock, or MPI_WTIME_IS_GLOBAL);
  // otherwise the longest per-peer duration is the best available.
  double seconds = 0.0;
  bool stop_requested = false;  // any peer

  // The counter columns that RoundRow and TrainingRow share.
  template <class Row>
  void copy_counters_to(Row& row) const {
    row.bytes_sent = bytes_sent;
    counts.write_to(row);
    row.detection_time = detection_time;
  }
};

class StatsReduction {
 public:
  // `vector_size`: the length of the vector each peer contributes.
  StatsReduction(MPI_Comm world, std::size_t vector_size);

  void set_watch(Watch* watch) { comm_.set_watch(watch); }
  Comm& comm() { return comm_; }

  // This peer's vector, to fill before reduce(); on rank 0 afterwards, the sums.
  std::span<double> vector() { return {buffer_.data(), vector_size_}; }

  // Collective. Rank 0 gets the totals; other ranks get Totals{}.
  Totals reduce(const PeerTally& tally);

  // Rank 0's `verdict` to every rank. Done every measurement: it also lines the
  // peers up for the next step, so the `time` column does not depend on the
  // options (sharing only every few rounds made it depend on --stop-at-target).
  void broadcast(std::span<double> verdict);

  // One measurement, collective: reduce() of `tally` and the vector, then on rank 0
  // `judge(totals)` makes the row and returns the verdict (a std::array of
  // doubles) that every rank gets through broadcast().
  template <class Judge>
  auto measure(const PeerTally& tally, Judge&& judge) {
    const Totals totals = reduce(tally);
    decltype(judge(totals)) verdict{};
    if (comm_.rank() == 0) verdict = judge(totals);
    broadcast(verdict);
    return verdict;
  }

 private:
  // The tally's place after the vector: sums first, maxima from `duration` on
  // (tree_reduce_to_root's layout).
  // `counts`: RoundReport::kCounts, one slot each.
  enum Slot : std::size_t { squares, bytes_low, bytes_high, counts,
                            duration = counts + RoundReport::kCounts.size(), start, end, stop, detection, slot_count };
  double& slot(Slot s) { return buffer_[vector_size_ + s]; }

  Comm comm_;
  std::size_t vector_size_;
  std::vector<double> buffer_, scratch_;
  bool global_clock_;
};

}  // namespace avb
