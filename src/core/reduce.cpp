#include "core/reduce.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace avb {

void tree_reduce_to_root(Comm& comm, std::span<double> values, std::size_t n_sum, std::span<double> scratch) {
  assert(scratch.size() >= values.size() && n_sum <= values.size());
  const int rank = comm.rank();
  const int size = comm.size();
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
      comm.ssend<double>(values, rank - mask, kTag);
      return;
    }
    if (rank + mask < size) {
      comm.recv<double>(scratch.first(values.size()), rank + mask, kTag);
      for (std::size_t k = 0; k < n_sum; ++k) values[k] += scratch[k];
      for (std::size_t k = n_sum; k < values.size(); ++k) values[k] = std::max(values[k], scratch[k]);
    }
  }
}

void tree_broadcast_from_root(Comm& comm, std::span<double> values) {
  const int rank = comm.rank();
  const int size = comm.size();
  constexpr int kTag = 7002;
  // The parent of r is r - lowbit(r); r serves r + m for every m below lowbit(r),
  // largest subtree first.
  int mask = 1;
  while (mask < size && !(rank & mask)) mask <<= 1;
  if (rank != 0)
    comm.recv<double>(values, rank - mask, kTag);
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (rank + mask < size)
      comm.ssend<double>(values, rank + mask, kTag);
}

void add_into(std::span<double> x, std::span<const double> y) {
  assert(x.size() == y.size());
  double* __restrict dst = x.data();
  const double* __restrict src = y.data();
  const std::size_t n = x.size();
  for (std::size_t k = 0; k < n; ++k) dst[k] += src[k];
}

namespace {
// 1/d when it is exact (d a power of two, 1/d normal): then x * (1/d) and x / d are
// both the correctly rounded x/d, bit for bit, and a multiplication is several
// times cheaper than a division. 0 otherwise.
double exact_reciprocal(double d) {
  int e = 0;
  const double m = std::frexp(d, &e);
  return m == 0.5 && e >= -1020 && e <= 1022 ? 1.0 / d : 0.0;
}
}  // namespace

// Divisions are the bottleneck of these two (a division costs several cycles per
// lane, a load one): wider vectors divide more lanes at once. One copy per ISA,
// chosen at load time; every copy computes the same correctly rounded quotients.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AVB_WIDE_DIVISION __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AVB_WIDE_DIVISION
#endif

AVB_WIDE_DIVISION void divide_by(std::span<double> x, double d) {
  double* __restrict dst = x.data();
  const std::size_t n = x.size();
  if (const double r = exact_reciprocal(d); r != 0.0)
    for (std::size_t k = 0; k < n; ++k) dst[k] *= r;
  else
    for (std::size_t k = 0; k < n; ++k) dst[k] /= d;
}

AVB_WIDE_DIVISION void sum_divide(std::span<const double* const> in, std::size_t length, double d, double* out) {
  // Blocks of 512 doubles (4 KiB) stay in L1 while the inputs are added into them,
  // up to four inputs per pass ((((s + a) + b) + c) + e: the order of the plain
  // loop, one load and store of s per four inputs): one pass over each input and
  // one over out, instead of a read-modify-write pass over a full-length sum per input.
  constexpr std::size_t kBlock = 512;
  alignas(64) double sum[kBlock];
  const double reciprocal = exact_reciprocal(d);
  for (std::size_t begin = 0; begin < length; begin += kBlock) {
    const std::size_t m = std::min(kBlock, length - begin);
    for (std::size_t k = 0; k < m; ++k) sum[k] = 0.0;  // 0.0 + x, as the plain loop: -0.0 becomes +0.0
    std::size_t i = 0;
    for (; i + 4 <= in.size(); i += 4) {
      const double* __restrict a = in[i] + begin;
      const double* __restrict b = in[i + 1] + begin;
      const double* __restrict c = in[i + 2] + begin;
      const double* __restrict e = in[i + 3] + begin;
      for (std::size_t k = 0; k < m; ++k) sum[k] = (((sum[k] + a[k]) + b[k]) + c[k]) + e[k];
    }
    for (; i + 2 <= in.size(); i += 2) {
      const double* __restrict a = in[i] + begin;
      const double* __restrict b = in[i + 1] + begin;
      for (std::size_t k = 0; k < m; ++k) sum[k] = (sum[k] + a[k]) + b[k];
    }
    for (; i < in.size(); ++i) {
      const double* __restrict a = in[i] + begin;
      for (std::size_t k = 0; k < m; ++k) sum[k] += a[k];
    }
    double* __restrict dst = out + begin;
    if (reciprocal != 0.0)
      for (std::size_t k = 0; k < m; ++k) dst[k] = sum[k] * reciprocal;
    else
      for (std::size_t k = 0; k < m; ++k) dst[k] = sum[k] / d;
  }
}

void tree_sum_all(Comm& comm, std::span<double> values, std::span<double> scratch) {
  tree_reduce_to_root(comm, values, values.size(), scratch);
  tree_broadcast_from_root(comm, values);
}

}  // namespace avb
