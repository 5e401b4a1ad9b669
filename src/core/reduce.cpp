#include "core/reduce.hpp"

#include <algorithm>
#include <cassert>

namespace avb {

void tree_reduce_to_root(const Comm& comm, std::span<double> values, std::size_t n_sum, std::span<double> scratch) {
  assert(scratch.size() >= values.size() && n_sum <= values.size());
  const int rank = comm.rank();
  const int size = comm.size();
  const int count = static_cast<int>(values.size());
  constexpr int kTag = 7001;
  // Rank r combines the partial results of r+1, r+2, r+4, ... (those below the
  // lowest set bit of r), then sends its own to r - lowbit(r). The order of the
  // additions is a function of (rank, size) alone.
  for (int mask = 1; mask < size; mask <<= 1) {
    if (rank & mask) {
      // Synchronous send: under SMPI 3.32 a small MPI_Send is "detached", and
      // with hundreds of them in flight a tree costs ~30x more wall time
      // (420 ms against 14 ms at 1024 ranks). The receiver is always waiting, so
      // real MPI loses nothing.
      check_mpi(MPI_Ssend(values.data(), count, MPI_DOUBLE, rank - mask, kTag, comm.raw()), "MPI_Ssend");
      return;
    }
    if (rank + mask < size) {
      check_mpi(MPI_Recv(scratch.data(), count, MPI_DOUBLE, rank + mask, kTag, comm.raw(), MPI_STATUS_IGNORE),
                "MPI_Recv");
      for (std::size_t k = 0; k < n_sum; ++k) values[k] += scratch[k];
      for (std::size_t k = n_sum; k < values.size(); ++k) values[k] = std::max(values[k], scratch[k]);
    }
  }
}

void tree_broadcast_from_root(const Comm& comm, std::span<double> values) {
  const int rank = comm.rank();
  const int size = comm.size();
  const int count = static_cast<int>(values.size());
  constexpr int kTag = 7002;
  // The parent of r is r - lowbit(r); r serves r + m for every m below lowbit(r),
  // largest subtree first.
  int mask = 1;
  while (mask < size && !(rank & mask)) mask <<= 1;
  if (rank != 0)
    check_mpi(MPI_Recv(values.data(), count, MPI_DOUBLE, rank - mask, kTag, comm.raw(), MPI_STATUS_IGNORE),
              "MPI_Recv");
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (rank + mask < size)
      check_mpi(MPI_Ssend(values.data(), count, MPI_DOUBLE, rank + mask, kTag, comm.raw()), "MPI_Ssend");
}

void tree_sum_all(const Comm& comm, std::span<double> values, std::span<double> scratch) {
  tree_reduce_to_root(comm, values, values.size(), scratch);
  tree_broadcast_from_root(comm, values);
}

}  // namespace avb
