// The metric columns of a training row (trainer.hpp, "Measurement") from the
// sums of one measurement, computed where the pooled problem is: on rank 0 of the
// MPI trainer, and in the sequential engine (sgd/sequential_trainer.hpp). One
// definition, so the two engines compute the same bits from the same sums.
#pragma once

#include <span>

#include <Eigen/Dense>

#include "sgd/problem.hpp"
#include "trace/trace.hpp"

namespace avb {

class TrainingMetrics {
 public:
  // Needs the pooled problem (rank 0's fields of `problem`), which must outlive this.
  explicit TrainingMetrics(const Problem& problem);

  // `sums`: sum_i (x_i - x*) (dim values), then sum_i x_i; `squares`:
  // sum_i ||x_i - x*||^2. Fills loss, gap, relative_gap, distance, consensus and
  // accuracy. Two sums: sum_i (x_i - x*) gives distance, gap and consensus to
  // rounding of the distance to x*; sum_i x_i gives the model itself, which must
  // be exactly 0 when every x_i is (accuracy takes signs of a^T x).
  TrainingRow row(std::span<const double> sums, double squares, int n_peers) const;

  // Whether a row's measures are finite: a peer's NaN or infinity reaches the
  // sums, and so the measures, of everyone.
  static bool finite(const TrainingRow& row, double squares);

 private:
  // f(x) - f* for the pooled problem, `offset` = x - x*.
  double gap(const Eigen::VectorXd& x, const Eigen::VectorXd& offset) const;

  const Problem& problem_;
  // A quadratic's Hessian diagonal (else empty): the exact form
  // 1/2 (x - x*)^T H (x - x*) keeps the gap accurate far below f*'s rounding
  // (the difference of two losses bottoms out near 1e-16 * f*).
  Eigen::VectorXd hessian_diagonal_;
  double initial_gap_;
};

}  // namespace avb
