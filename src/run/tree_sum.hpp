// The sequential engine's measurement sums, in the order of the MPI engines'
// binomial tree (core/reduce.hpp, tree_reduce_to_root), so that both engines'
// sums have the same bits: shared by averaging (run/sequential.cpp) and training
// (sgd/sequential_trainer.cpp).
#pragma once

#include <cstddef>
#include <span>

namespace avb {

// Sums the rows (of `width` values each) of `rows` into row 0: row r adds rows
// r + 1, r + 2, r + 4, ... below its lowest set bit, as rank r does.
template <std::size_t kWidth = 0>
void tree_sum_of(std::span<double> rows, std::size_t width) {
  if constexpr (kWidth != 0) width = kWidth;  // a loop the compiler unrolls
  const std::size_t n = rows.size() / width;
  for (std::size_t mask = 1; mask < n; mask <<= 1)
    for (std::size_t r = 0; r + mask < n; r += 2 * mask)
      for (std::size_t k = 0; k < width; ++k) rows[r * width + k] += rows[(r + mask) * width + k];
}
inline void tree_sum(std::span<double> rows, std::size_t width) {
  // The same sums; rows of one or two values (--dim 1, with its squares) unrolled.
  if (width == 1) return tree_sum_of<1>(rows, width);
  if (width == 2) return tree_sum_of<2>(rows, width);
  tree_sum_of(rows, width);
}

}  // namespace avb
