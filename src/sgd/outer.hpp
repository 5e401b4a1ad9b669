// DiLoCo's outer loop on one peer (sgd/options.hpp, OuterOptions): what both
// trainers (trainer.cpp, sequential_trainer.cpp) do around a round, on the same
// arithmetic so that their models agree bit for bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "sgd/options.hpp"

namespace avb {

// The coordinates a round mixes: with F fragments (Streaming DiLoCo), round r
// (1-based) takes fragment (r - 1) mod F of F contiguous parts, [f d / F,
// (f + 1) d / F); with none, or one, the whole model.
struct Fragment {
  int index = 0;
  std::size_t begin = 0, size = 0;
};
inline Fragment round_fragment(const OuterOptions& o, int round, std::size_t d) {
  const int parts = o.kind == OuterOptimizer::none ? 1 : o.fragments;
  const int f = (round - 1) % parts;
  const std::size_t begin = d * static_cast<std::size_t>(f) / static_cast<std::size_t>(parts);
  const std::size_t end = d * static_cast<std::size_t>(f + 1) / static_cast<std::size_t>(parts);
  return {f, begin, end - begin};
}

// --outer-mix pseudo-gradients: turns a peer's fragment from its model x into
// what it sends, its pseudo-gradient a - x, before the round; and the mixed
// pseudo-gradient back into a model, a - mixed, after it (the same map both ways).
// A peer that sat the round out gets its own x back, to rounding.
inline void swap_pseudo_gradient(const OuterOptions& o, std::span<double> x, std::span<const double> anchor) {
  if (o.kind == OuterOptimizer::none || o.mix != OuterMix::pseudo_gradients) return;
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = anchor[k] - x[k];
}

// After the round, on one peer's fragment: `x` holds its mixed model m there.
// A peer that took part steps from its anchor along the pseudo-gradient
// D = anchor - m (`velocity` is the outer momentum), written m + (D - lr u), which
// is anchor - lr u: with lr 1 and no momentum u is D and the result is m, bit for
// bit, which is local SGD. Every peer's anchor then becomes its model: the next
// local steps on this fragment start there.
inline void outer_step(const OuterOptions& o, std::span<double> x, std::span<double> anchor,
                       std::span<double> velocity, bool took_part) {
  for (std::size_t k = 0; took_part && k < x.size(); ++k) {
    const double d = anchor[k] - x[k];
    velocity[k] = o.momentum * velocity[k] + d;
    const double direction = o.kind == OuterOptimizer::nesterov ? d + o.momentum * velocity[k] : velocity[k];
    x[k] += d - o.lr * direction;
  }
  std::copy(x.begin(), x.end(), anchor.begin());
}

}  // namespace avb
