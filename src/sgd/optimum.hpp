// The minimiser x* and minimum f* of the pooled objective, for the f(x_bar) - f*
// and ||x_bar - x*||^2 columns of an SGD trace. Both problems are strongly convex,
// so a second-order method reaches x* to rounding level in seconds (w8a: ~3 s).
#pragma once

#include <atomic>

#include <Eigen/Dense>

#include "sgd/objective.hpp"

namespace avb {

struct Optimum {
  Eigen::VectorXd x;           // x*
  double loss = 0.0;           // f* = f(x*)
  double gradient_norm = 0.0;  // ||grad f(x*)||, as evaluated at the returned x
  // The size of the terms summed into that gradient (see gradient_scale): the
  // stopping rules are relative to it, so that they hold at any scale of data.
  double gradient_scale = 0.0;
  int iterations = 0;          // Newton iterations; 0 for the direct quadratic solve
  // False when the gradient stayed above tolerance x gradient_scale (Newton ran out
  // of iterations or its line search stalled; the direct solve lost too much to
  // rounding) or is not finite: the caller decides whether that f* will do.
  bool converged = false;
};

// The tolerance of the stopping rules, relative to the gradient's scale: rounding
// leaves about 1e-16 of it, so 1e-10 is met wherever double precision can be.
inline constexpr double kOptimumTolerance = 1e-10;

// ||sum of |terms| of grad f(x)||: for the quadratic mean_j |A_j| (|A_j| |x| + |b_j|),
// for the logistic sum_s w_s |a_s| + l2 |x|. A gradient that cancels to below
// kOptimumTolerance times it is zero to the precision of its own arithmetic.
double gradient_scale(const QuadraticObjective& objective, const Eigen::VectorXd& x);
double gradient_scale(const LogisticObjective& objective, const Eigen::VectorXd& x);

// The pooled normal equations, solved coordinate by coordinate (what LDLT does
// with a diagonal matrix); `tolerance` (relative) only sets `converged`.
Optimum quadratic_optimum(const QuadraticObjective& objective, double tolerance = kOptimumTolerance);

inline constexpr int kMaxNewtonIterations = 100;

// Newton from x = 0 with Armijo backtracking until ||grad f|| <= tolerance x
// gradient_scale; the l2 term keeps the Hessian positive definite. `stop` is
// polled between blocks of samples (StopRequested, core/error.hpp).
Optimum logistic_optimum(const LogisticObjective& objective, double tolerance = kOptimumTolerance,
                         int max_iterations = kMaxNewtonIterations, const std::atomic<bool>* stop = nullptr);

// Either of the above by the objective's type (std::invalid_argument otherwise).
Optimum find_optimum(const Objective& objective, double tolerance = kOptimumTolerance,
                     const std::atomic<bool>* stop = nullptr);

}  // namespace avb
