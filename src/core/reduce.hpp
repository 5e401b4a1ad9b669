// Reductions whose floating-point result depends only on the communicator size.
//
// MPI_Reduce may add in any order (and Open MPI and SMPI do differ), which would
// make metrics differ in the last bits between engines. These sum in a fixed
// binomial tree, so the same run gives bit-identical traces on every engine.
// They call MPI directly and are meant for measurement on a communicator that
// protocols do not use, so they are never counted as protocol traffic.
#pragma once

#include <span>

#include "core/comm.hpp"

namespace avb {

// Sums `values` over all ranks into rank 0's `values` (other ranks' buffers are
// clobbered). `scratch` must have values.size() elements.
void tree_sum_to_root(const Comm& comm, std::span<double> values, std::span<double> scratch);

// tree_sum_to_root followed by a broadcast: every rank ends with the same sum.
void tree_sum_all(const Comm& comm, std::span<double> values, std::span<double> scratch);

}  // namespace avb
