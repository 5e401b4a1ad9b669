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

  // A trial has diverged when its measures are not finite, or when its gap exceeds
  // kDivergenceFactor times the widest gap a run can have while it stays where a
  // stable one stays: between x_0 = 0 and the peers' own optima (coordinate by
  // coordinate, for a quadratic: local steps contract towards a peer's optimum
  // and averaging takes convex combinations, so no model leaves that box; the
  // gap over it is at most the largest over its corners). For the logistic, whose
  // peers' optima are not computed, the gap at step 0 stands in (its loss grows
  // only linearly away from them). The factor leaves room for what takes a
  // stable run out of the box (momentum's and a long step's overshoot, gradient
  // noise, quantization) and costs a geometrically diverging run only a few
  // evaluations more; docs/sgd.md ("Divergence") has the measurements. Finite
  // models that far out are on their way to overflow: waiting for the NaN would
  // report a number such as 1e40 as a result.
  static constexpr double kDivergenceFactor = 1e6;
  bool diverged(const TrainingRow& row, double squares) const;
  // The relative gap above which a trial has diverged (at least
  // kDivergenceFactor: the box holds x_0); +inf when the gap at step 0 is 0.
  double divergence_relative_gap() const;

 private:
  // f(x) - f* for the pooled problem, `offset` = x - x*.
  double gap(const Eigen::VectorXd& x, const Eigen::VectorXd& offset) const;

  const Problem& problem_;
  // A quadratic's Hessian diagonal (else empty): the exact form
  // 1/2 (x - x*)^T H (x - x*) keeps the gap accurate far below f*'s rounding
  // (the difference of two losses bottoms out near 1e-16 * f*).
  Eigen::VectorXd hessian_diagonal_;
  double initial_gap_;
  double divergence_gap_;  // kDivergenceFactor x the widest gap; +inf when that is 0
};

}  // namespace avb
