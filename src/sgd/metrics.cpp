#include "sgd/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sgd/image_objective.hpp"

namespace avb {

namespace {

// The largest gap (1/2) sum_k H_k (v_k - x*_k)^2 over the box whose coordinate k
// spans 0 and every peer's own optimum b_ik / a_ik: the gap is separable, so each
// coordinate takes its farthest end.
double widest_quadratic_gap(const QuadraticObjective& pooled, const Eigen::VectorXd& hessian,
                            const Eigen::VectorXd& optimum) {
  const Eigen::MatrixXd &a = pooled.diagonals(), &b = pooled.targets();
  double sum = 0.0;
  for (Eigen::Index k = 0; k < a.rows(); ++k) {
    double low = 0.0, high = 0.0;  // x_0 = 0 is in the box
    for (Eigen::Index i = 0; i < a.cols(); ++i) {
      const double own = b(k, i) / a(k, i);
      low = std::min(low, own);
      high = std::max(high, own);
    }
    const double far = std::max(optimum[k] - low, high - optimum[k]);
    sum += hessian[k] * far * far;
  }
  return 0.5 * sum;
}

}  // namespace

TrainingMetrics::TrainingMetrics(const Problem& problem)
    : problem_(problem), initial_gap_(problem.initial_loss - problem.optimum.loss) {
  const auto* q = dynamic_cast<const QuadraticObjective*>(problem.pooled.get());
  if (q) hessian_diagonal_ = q->diagonals().array().square().rowwise().mean();
  // x_0 = 0: the initial gap by the same formula as every later one.
  if (hessian_diagonal_.size() > 0)
    initial_gap_ = gap(Eigen::VectorXd::Zero(problem.pooled->dim()), -problem.optimum.x);
  const double widest = q ? widest_quadratic_gap(*q, hessian_diagonal_, problem.optimum.x) : initial_gap_;
  divergence_gap_ = widest > 0 ? kDivergenceFactor * widest : std::numeric_limits<double>::infinity();
}

double TrainingMetrics::gap(const Eigen::VectorXd& x, const Eigen::VectorXd& offset) const {
  if (hessian_diagonal_.size() > 0) return 0.5 * (hessian_diagonal_.array() * offset.array().square()).sum();
  return problem_.pooled->loss(x) - problem_.optimum.loss;
}

TrainingRow TrainingMetrics::row(std::span<const double> sums, double squares, int n_peers) const {
  const double n = static_cast<double>(n_peers);
  const std::size_t dim = sums.size() / 2;
  const auto d = static_cast<Eigen::Index>(dim);
  Eigen::VectorXd offset(d), mean(d);
  for (std::size_t k = 0; k < dim; ++k) {
    offset[static_cast<Eigen::Index>(k)] = sums[k] / n;
    mean[static_cast<Eigen::Index>(k)] = sums[dim + k] / n;
  }
  TrainingRow row;
  row.distance = offset.squaredNorm();
  // Rounding can take the difference below 0; a diverged run's NaN must stay NaN.
  const double consensus = squares / n - row.distance;
  row.consensus = consensus < 0.0 ? 0.0 : consensus;
  row.loss = problem_.pooled->loss(mean);
  row.gap = gap(mean, offset);
  row.relative_gap = initial_gap_ > 0 ? row.gap / initial_gap_ : 0.0;
  row.accuracy = problem_.test          ? accuracy(*problem_.test, mean)
                 : problem_.test_images
                     ? dynamic_cast<const ImageObjective&>(*problem_.pooled).accuracy(*problem_.test_images, mean)
                                        : std::numeric_limits<double>::quiet_NaN();
  return row;
}

bool TrainingMetrics::finite(const TrainingRow& row, double squares) {
  return std::isfinite(squares) && std::isfinite(row.distance) && std::isfinite(row.loss) && std::isfinite(row.gap);
}

bool TrainingMetrics::diverged(const TrainingRow& row, double squares) const {
  return !finite(row, squares) || row.gap > divergence_gap_;
}

double TrainingMetrics::divergence_relative_gap() const {
  return initial_gap_ > 0 ? divergence_gap_ / initial_gap_ : std::numeric_limits<double>::infinity();
}

}  // namespace avb
