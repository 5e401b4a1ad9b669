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
void tree_reduce_to_root(Comm& comm, std::span<double> values, std::size_t n_sum, std::span<double> scratch);

// Copies rank 0's `values` to every rank, down the same binomial tree with
// synchronous sends (under SMPI 3.32 faster in wall time than MPI_Bcast).
void tree_broadcast_from_root(Comm& comm, std::span<double> values);

// Sums `values` over all ranks; every rank ends with the same (rank 0's) bits.
void tree_sum_all(Comm& comm, std::span<double> values, std::span<double> scratch);

// ---- element-wise kernels of the group collectives ----------------------------
// The loops the ring and the butterfly run, here so that bench/kernels_bench
// measures exactly them. Each is one pass and vectorizes; the spans must not
// overlap (the ring and the butterfly never pass overlapping ones). The order of
// the additions for each element is the documented one, whatever the
// vectorization, so results are bit-identical to the plain loops they replace.

// x[k] += y[k] (x.size() == y.size()).
void add_into(std::span<double> x, std::span<const double> y);

// x[k] /= d. Division rather than multiplication by 1/d: x/d is the correctly
// rounded mean of a sum, x * (1/d) is not -- except when d is a power of two,
// where 1/d is exact and the kernel multiplies (the same bits, faster).
void divide_by(std::span<double> x, double d);

// out[k] = ((0.0 + in[0][k]) + in[1][k] + ... + in[m-1][k]) / d, added in the
// order of `in`, for k < length. `out` may be one of the inputs (it is written
// block by block after the block's inputs have been read); no other overlap.
void sum_divide(std::span<const double* const> in, std::size_t length, double d, double* out);

}  // namespace avb
