// DiLoCo's outer loop on one peer (sgd/options.hpp, OuterOptions): what both
// trainers (trainer.cpp, sequential_trainer.cpp) do around a round, on the same
// arithmetic so that their models agree bit for bit.
#pragma once

#include <cstddef>
#include <span>

#include "sgd/options.hpp"

namespace avb {

// After the round, on a peer that took part: `x` holds its mixed model m, and
// becomes the model of the outer step from its anchor along the pseudo-gradient
// D = anchor - m (`velocity` is the outer momentum). Written as m + (D - lr u),
// which is anchor - lr u: with lr 1 and no momentum u is D and the result is m,
// bit for bit, which is local SGD.
inline void outer_step(const OuterOptions& o, std::span<double> x, std::span<const double> anchor,
                       std::span<double> velocity) {
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double d = anchor[k] - x[k];
    velocity[k] = o.momentum * velocity[k] + d;
    const double direction = o.kind == OuterOptimizer::nesterov ? d + o.momentum * velocity[k] : velocity[k];
    x[k] += d - o.lr * direction;
  }
}

}  // namespace avb
