// The minimiser x* and minimum f* of the pooled objective, for the f(x_bar) - f*
// and ||x_bar - x*||^2 columns of an SGD trace. Every problem is strongly convex:
// a second-order method reaches x* to rounding level in seconds (w8a: ~3 s), and
// L-BFGS the softmax's, whose d = 7,850 parameters are too many for Newton's
// dense Hessian.
#pragma once

#include <atomic>

#include <Eigen/Dense>

#include "sgd/objective.hpp"
#include "sgd/mlp.hpp"
#include "sgd/softmax.hpp"

namespace avb {

struct Optimum {
  Eigen::VectorXd x;           // x*
  double loss = 0.0;           // f* = f(x*)
  double gradient_norm = 0.0;  // ||grad f(x*)||, as evaluated at the returned x
  // The size of the terms summed into that gradient (see gradient_scale): the
  // stopping rules are relative to it, so that they hold at any scale of data.
  double gradient_scale = 0.0;
  int iterations = 0;          // Newton or L-BFGS iterations; 0 for the direct quadratic solve
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
// The softmax's: sum_s v_s |(a_s, 1)| + l2 |x| (each class's terms are
// v_s (p_c - y_c)(a_s, 1), with |p_c - y_c| <= 1).
double gradient_scale(const SoftmaxObjective& objective, const Eigen::VectorXd& x);

// The pooled normal equations, solved coordinate by coordinate (what LDLT does
// with a diagonal matrix); `tolerance` (relative) only sets `converged`.
Optimum quadratic_optimum(const QuadraticObjective& objective, double tolerance = kOptimumTolerance);

inline constexpr int kMaxNewtonIterations = 100;

// Newton from x = 0 with Armijo backtracking until ||grad f|| <= tolerance x
// gradient_scale; the l2 term keeps the Hessian positive definite. `stop` is
// polled between blocks of samples (StopRequested, core/error.hpp).
Optimum logistic_optimum(const LogisticObjective& objective, double tolerance = kOptimumTolerance,
                         int max_iterations = kMaxNewtonIterations, const std::atomic<bool>* stop = nullptr);

inline constexpr int kMaxLbfgsIterations = 20000;
inline constexpr int kLbfgsHistory = 20;  // (s, y) pairs kept

// L-BFGS from x = 0 (the two-loop recursion over the last kLbfgsHistory pairs,
// Armijo backtracking from the unit step) until ||grad f|| <= tolerance x
// gradient_scale; one pass over the data per trial point. `stop` is polled
// every iteration.
Optimum softmax_optimum(const SoftmaxObjective& objective, double tolerance = kOptimumTolerance,
                        int max_iterations = kMaxLbfgsIterations, const std::atomic<bool>* stop = nullptr);

// A non-convex objective's stand-in (the MLP's): no minimiser is computed, f* = 0
// is the lower bound of a cross entropy plus an L2 term, and x* = 0 is the start,
// so the gap columns read f(x) / f(x_0) and the distance ||x - x_0||^2.
Optimum lower_bound_optimum(int dim);

// The solver find_optimum uses for a kind, as /optimum's `method` names it:
// "ldlt" (quadratic), "newton" (logistic), "lbfgs" (softmax), "none" (mlp:
// lower_bound_optimum).
const char* optimum_method(ObjectiveKind kind);

// Any of the above by the objective's type (std::invalid_argument otherwise).
Optimum find_optimum(const Objective& objective, double tolerance = kOptimumTolerance,
                     const std::atomic<bool>* stop = nullptr);

}  // namespace avb
