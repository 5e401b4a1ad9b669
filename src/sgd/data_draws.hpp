// Round words of Stream(seed, StreamId::data): what a draw of the data is for.
// Part of the reproducibility contract (a run's data must not change between
// versions): never renumber.
#pragma once

#include <cstdint>

namespace avb {

enum DataDraw : std::uint64_t {
  draw_target = 1,      // b_i[k]: counter (1, i, k)
  draw_direction = 2,   // e[k] before normalisation: counter (2, 0, k)
  draw_features = 3,    // feature k of sample j of peer i: counter (3, i, j * d + k)
  draw_shuffle = 4,     // Fisher-Yates swap at position p: counter (4, 0, p)
  draw_class_order = 5,  // --split dirichlet: class c's swap at position p: counter (5, c, p)
  draw_class_share = 6,  // --split dirichlet: class c's Gamma draws for peer i: counter (6, c, i * 128 + k)
};

}  // namespace avb
