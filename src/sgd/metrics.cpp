#include "sgd/metrics.hpp"

#include <cmath>
#include <limits>

namespace avb {

TrainingMetrics::TrainingMetrics(const Problem& problem)
    : problem_(problem), initial_gap_(problem.initial_loss - problem.optimum.loss) {
  if (const auto* q = dynamic_cast<const QuadraticObjective*>(problem.pooled.get()))
    hessian_diagonal_ = q->diagonals().array().square().rowwise().mean();
  // x_0 = 0: the initial gap by the same formula as every later one.
  if (hessian_diagonal_.size() > 0)
    initial_gap_ = gap(Eigen::VectorXd::Zero(problem.pooled->dim()), -problem.optimum.x);
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
  row.accuracy = problem_.test ? accuracy(*problem_.test, mean) : std::numeric_limits<double>::quiet_NaN();
  return row;
}

bool TrainingMetrics::finite(const TrainingRow& row, double squares) {
  return std::isfinite(squares) && std::isfinite(row.distance) && std::isfinite(row.loss) && std::isfinite(row.gap);
}

}  // namespace avb
