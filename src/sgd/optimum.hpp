// The minimiser x* and minimum f* of the pooled objective, for the f(x_bar) - f*
// and ||x_bar - x*||^2 columns of an SGD trace. Both problems are strongly convex,
// so a second-order method reaches x* to rounding level in seconds (w8a: ~3 s).
#pragma once

#include <Eigen/Dense>

#include "sgd/objective.hpp"

namespace avb {

struct Optimum {
  Eigen::VectorXd x;           // x*
  double loss = 0.0;           // f* = f(x*)
  double gradient_norm = 0.0;  // ||grad f(x*)||, as evaluated at the returned x
  int iterations = 0;          // Newton iterations; 0 for the direct quadratic solve
  // False when Newton ran out of iterations or its line search stalled: the
  // caller decides whether that f* will do.
  bool converged = false;
};

// LDLT of the normal equations; `tolerance` only sets `converged`.
Optimum quadratic_optimum(const QuadraticObjective& objective, double tolerance = 1e-10);

// Newton from x = 0 with Armijo backtracking until ||grad f|| <= tolerance; the
// l2 term keeps the Hessian positive definite.
Optimum logistic_optimum(const LogisticObjective& objective, double tolerance = 1e-10, int max_iterations = 100);

// Either of the above by the objective's type (std::invalid_argument otherwise).
Optimum find_optimum(const Objective& objective, double tolerance = 1e-10);

}  // namespace avb
