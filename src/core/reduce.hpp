// Reductions whose floating-point result depends only on the communicator size.
//
// MPI_Reduce may add in any order (and Open MPI and SMPI do differ), which would
// make metrics differ in the last bits between engines. These combine in a fixed
// binomial tree, so the same run gives bit-identical traces on every engine. They
// call MPI directly and are meant for measurement on a communicator that protocols
// do not use, so they are never counted as protocol traffic. A tree to the root
// costs n-1 messages, the fewest possible: under SMPI, wall time grows with the
// number of simulated messages, and measurement runs every round.
#pragma once

#include <span>

#include "core/comm.hpp"

namespace avb {

// Combines `values` over all ranks into rank 0's `values`: entries [0, n_sum) are
// added, entries [n_sum, size) take the maximum. Other ranks' buffers are
// clobbered. `scratch` must have values.size() elements.
void tree_reduce_to_root(const Comm& comm, std::span<double> values, std::size_t n_sum, std::span<double> scratch);

// Copies rank 0's `values` to every rank, down the same binomial tree with
// synchronous sends (under SMPI 3.32 faster in wall time than MPI_Bcast).
void tree_broadcast_from_root(const Comm& comm, std::span<double> values);

// Sums `values` over all ranks; every rank ends with the same (rank 0's) bits.
void tree_sum_all(const Comm& comm, std::span<double> values, std::span<double> scratch);

}  // namespace avb
