// What a protocol reports of one round beyond the peers' vectors: the counts that
// the trace's counter columns record. Both forms of a protocol report it, the MPI
// form per peer (GroupCounters, which the measurement sums over peers) and the
// population form for all peers at once (RoundEffect), and every runner writes
// it into its trace row with write_to(), so a count is declared here once.
#pragma once

#include <array>

namespace avb {

struct RoundReport {
  int groups = 0;           // groups that attempted to average (swarm: interactions initiated), each counted once
  int failed_groups = 0;    // of those, groups whose averaging was cancelled by a failure
  int decode_failures = 0;  // quantized messages that could not be decoded (lattice)
  int late = 0;             // peers a waiting policy left behind (sim/arrivals.hpp)

  // Every count, for code that moves them all alike (sums, reductions).
  static constexpr std::array<int RoundReport::*, 4> kCounts{&RoundReport::groups, &RoundReport::failed_groups,
                                                             &RoundReport::decode_failures, &RoundReport::late};

  RoundReport& operator+=(const RoundReport& other) {
    for (auto count : kCounts) this->*count += other.*count;
    return *this;
  }

  // Its columns of a trace row; a training row has no `late` column.
  template <class Row>
  void write_to(Row& row) const {
    row.groups = groups;
    row.failed_groups = failed_groups;
    row.decode_failures = decode_failures;
    if constexpr (requires { row.late; }) row.late = late;
  }
};

}  // namespace avb
