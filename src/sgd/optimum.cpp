#include "sgd/optimum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace avb {

namespace {

// Rows per block when the Hessian is accumulated, so that the scaled copy of the
// data stays small (w8a whole would be 120 MB).
constexpr Eigen::Index hessian_block_rows = 1024;

// sum_s w_s s(z_s)(1 - s(z_s)) a_s a_s^T + l2 I at x.
Eigen::MatrixXd logistic_hessian(const LogisticObjective& objective, const Eigen::VectorXd& x,
                                 const std::atomic<bool>* stop) {
  const SampleMatrix& features = objective.samples().features;
  const Eigen::Index m = features.rows(), d = features.cols();
  Eigen::MatrixXd hessian = Eigen::MatrixXd::Zero(d, d);
  for (Eigen::Index first = 0; first < m; first += hessian_block_rows) {
    check_stop(stop);
    const Eigen::Index rows = std::min(hessian_block_rows, m - first);
    const auto block = features.middleRows(first, rows);
    Eigen::VectorXd curvature = block * x;
    for (Eigen::Index s = 0; s < rows; ++s) {
      // s(z)(1 - s(z)) = s(z) s(-z) is even in z, so the label does not matter.
      const double z = curvature[s];
      curvature[s] = objective.weights()[first + s] * sigmoid(z) * sigmoid(-z);
    }
    // Symmetric rank-k update of the lower triangle: half the work of a product.
    const SampleMatrix scaled = curvature.cwiseSqrt().asDiagonal() * block;
    hessian.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
  }
  hessian.triangularView<Eigen::StrictlyUpper>() = hessian.transpose();
  hessian.diagonal().array() += objective.l2();
  return hessian;
}

}  // namespace

double gradient_scale(const QuadraticObjective& objective, const Eigen::VectorXd& x) {
  const Eigen::ArrayXXd a = objective.diagonals().array().abs();
  const Eigen::ArrayXXd terms = a * ((a.colwise() * x.array().abs()) + objective.targets().array().abs());
  return (terms.rowwise().sum() / static_cast<double>(a.cols())).matrix().norm();
}

double gradient_scale(const LogisticObjective& objective, const Eigen::VectorXd& x) {
  const Eigen::VectorXd features = objective.samples().features.cwiseAbs().transpose() * objective.weights();
  return features.norm() + objective.l2() * x.norm();
}

namespace {
bool small_enough(double gradient_norm, double scale, double tolerance) {
  return std::isfinite(gradient_norm) && std::isfinite(scale) && gradient_norm <= tolerance * scale;
}
}  // namespace

Optimum quadratic_optimum(const QuadraticObjective& objective, double tolerance) {
  Optimum out;
  // The pooled normal matrix is diagonal: solved coordinate by coordinate, as
  // LDLT would (it divides by the same pivots), without a dense dim x dim matrix,
  // which at --dim 40000 alone would take 12.8 GB.
  const Eigen::VectorXd pivots = objective.normal_matrix_diagonal();
  const Eigen::VectorXd rhs = objective.normal_rhs();
  out.x.resize(rhs.size());
  for (Eigen::Index k = 0; k < rhs.size(); ++k)
    out.x[k] = std::abs(pivots[k]) > std::numeric_limits<double>::min() ? rhs[k] / pivots[k] : 0.0;
  out.loss = objective.loss(out.x);
  Eigen::VectorXd g(objective.dim());
  objective.gradient(out.x, g);
  out.gradient_norm = g.norm();
  out.gradient_scale = gradient_scale(objective, out.x);
  out.converged = small_enough(out.gradient_norm, out.gradient_scale, tolerance) && std::isfinite(out.loss);
  return out;
}

Optimum logistic_optimum(const LogisticObjective& objective, double tolerance, int max_iterations,
                         const std::atomic<bool>* stop) {
  constexpr double armijo = 1e-4;
  constexpr int max_halvings = 60;
  const int d = objective.dim();
  Optimum out;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), g(d), trial(d);
  double loss = objective.loss(x);
  objective.gradient(x, g);
  int iteration = 0;
  for (; !small_enough(g.norm(), gradient_scale(objective, x), tolerance) && iteration < max_iterations;
       ++iteration) {
    const Eigen::VectorXd step = logistic_hessian(objective, x, stop).ldlt().solve(-g);
    const double slope = g.dot(step);  // < 0 for a positive definite Hessian
    // Near x*, f(x + step) - f(x) falls below the rounding error of f itself; the
    // slack lets the full Newton step through there instead of halving it away.
    const double slack = 10.0 * std::numeric_limits<double>::epsilon() * std::abs(loss);
    double t = 1.0, trial_loss = 0.0;
    bool accepted = false;
    for (int h = 0; h < max_halvings; ++h) {
      check_stop(stop);  // each loss is a pass over every sample
      trial = x + t * step;
      trial_loss = objective.loss(trial);
      if (trial_loss <= loss + armijo * t * slope + slack) {
        accepted = true;
        break;
      }
      t *= 0.5;
    }
    if (!accepted) break;  // stalled: report what we have, converged = false
    x = trial;
    loss = trial_loss;
    objective.gradient(x, g);
  }
  out.x = std::move(x);
  out.loss = loss;
  out.gradient_norm = g.norm();
  out.gradient_scale = gradient_scale(objective, out.x);
  out.iterations = iteration;
  out.converged = small_enough(out.gradient_norm, out.gradient_scale, tolerance) && std::isfinite(out.loss);
  return out;
}

Optimum lower_bound_optimum(int dim) {
  Optimum out;
  out.x = Eigen::VectorXd::Zero(dim);
  out.converged = true;  // nothing was solved, so nothing failed to converge
  return out;
}

Optimum find_optimum(const Objective& objective, double tolerance, const std::atomic<bool>* stop) {
  if (const auto* quadratic = dynamic_cast<const QuadraticObjective*>(&objective))
    return quadratic_optimum(*quadratic, tolerance);
  if (const auto* logistic = dynamic_cast<const LogisticObjective*>(&objective))
    return logistic_optimum(*logistic, tolerance, kMaxNewtonIterations, stop);
  if (const auto* softmax = dynamic_cast<const SoftmaxObjective*>(&objective))
    return softmax_optimum(*softmax, tolerance, kMaxLbfgsIterations, stop);
  if (dynamic_cast<const MlpObjective*>(&objective)) return lower_bound_optimum(objective.dim());
  throw std::invalid_argument("find_optimum: not a quadratic, logistic, softmax or MLP objective");
}

const char* optimum_method(ObjectiveKind kind) {
  switch (kind) {
    case ObjectiveKind::quadratic: return "ldlt";
    case ObjectiveKind::logistic: return "newton";
    case ObjectiveKind::softmax: return "lbfgs";
    case ObjectiveKind::mlp: return "none";
  }
  return "";
}

}  // namespace avb
