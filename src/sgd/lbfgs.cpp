// L-BFGS for the softmax's optimum (sgd/optimum.hpp).
#include <cmath>
#include <deque>
#include <limits>
#include <utility>

#include "core/error.hpp"
#include "sgd/optimum.hpp"

namespace avb {

namespace {

// sum_s v_s |(a_s, 1)|, the part of the softmax's gradient scale that does not
// depend on x: the weighted mean image and the weights' sum.
double softmax_feature_scale(const SoftmaxObjective& objective) {
  const ImageSet& data = objective.samples();
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(data.dim());
  for (Eigen::Index s = 0; s < data.samples(); ++s)
    mean += objective.weights()[s] * data.pixels.row(s).transpose().cast<double>();
  mean *= kPixelScale;
  const double bias = objective.weights().sum();
  return std::sqrt(mean.squaredNorm() + bias * bias);
}

bool lbfgs_converged(double gradient_norm, double scale, double tolerance) {
  return std::isfinite(gradient_norm) && std::isfinite(scale) && gradient_norm <= tolerance * scale;
}

struct CurvaturePair {
  Eigen::VectorXd s, y;
  double rho = 0.0;  // 1 / s^T y
};

// -H g by the two-loop recursion, H_0 = (s^T y / y^T y) I of the newest pair; -g
// scaled to a unit first step without pairs.
Eigen::VectorXd lbfgs_direction(const std::deque<CurvaturePair>& pairs, const Eigen::VectorXd& g) {
  if (pairs.empty()) return -g / std::max(1.0, g.norm());
  Eigen::VectorXd q = g;
  std::vector<double> alpha(pairs.size());
  for (std::size_t i = pairs.size(); i-- > 0;) {
    alpha[i] = pairs[i].rho * pairs[i].s.dot(q);
    q -= alpha[i] * pairs[i].y;
  }
  const CurvaturePair& newest = pairs.back();
  q *= 1.0 / (newest.rho * newest.y.squaredNorm());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const double beta = pairs[i].rho * pairs[i].y.dot(q);
    q += (alpha[i] - beta) * pairs[i].s;
  }
  return -q;
}

}  // namespace

double gradient_scale(const SoftmaxObjective& objective, const Eigen::VectorXd& x) {
  return softmax_feature_scale(objective) + objective.l2() * x.norm();
}

Optimum softmax_optimum(const SoftmaxObjective& objective, double tolerance, int max_iterations,
                        const std::atomic<bool>* stop) {
  constexpr double armijo = 1e-4;
  constexpr int max_halvings = 60;
  const int d = objective.dim();
  const double feature_scale = softmax_feature_scale(objective);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), g(d), trial(d), trial_g(d);
  double loss = objective.loss_and_gradient(x, g);
  std::deque<CurvaturePair> pairs;
  int iteration = 0;
  for (; iteration < max_iterations &&
         !lbfgs_converged(g.norm(), feature_scale + objective.l2() * x.norm(), tolerance);
       ++iteration) {
    check_stop(stop);
    Eigen::VectorXd direction = lbfgs_direction(pairs, g);
    double slope = g.dot(direction);
    if (!(slope < 0.0)) {  // lost to rounding: start again from steepest descent
      pairs.clear();
      direction = lbfgs_direction(pairs, g);
      slope = g.dot(direction);
    }
    // As Newton's: near x* the decrease falls below f's own rounding.
    const double slack = 10.0 * std::numeric_limits<double>::epsilon() * std::abs(loss);
    double t = 1.0, trial_loss = 0.0;
    bool accepted = false;
    for (int h = 0; h < max_halvings && !accepted; ++h, t *= 0.5) {
      trial = x + t * direction;
      trial_loss = objective.loss_and_gradient(trial, trial_g);
      accepted = trial_loss <= loss + armijo * t * slope + slack;
      if (accepted) break;
    }
    if (!accepted) break;  // stalled: report what we have, converged = false
    CurvaturePair pair{trial - x, trial_g - g, 0.0};
    const double sy = pair.s.dot(pair.y);
    x.swap(trial);
    g.swap(trial_g);
    loss = trial_loss;
    if (!(sy > 0.0)) continue;  // l2 > 0 makes s^T y > 0 but for rounding
    pair.rho = 1.0 / sy;
    pairs.push_back(std::move(pair));
    if (static_cast<int>(pairs.size()) > kLbfgsHistory) pairs.pop_front();
  }
  Optimum out;
  out.x = std::move(x);
  out.loss = loss;
  out.gradient_norm = g.norm();
  out.gradient_scale = feature_scale + objective.l2() * out.x.norm();
  out.iterations = iteration;
  out.converged = lbfgs_converged(out.gradient_norm, out.gradient_scale, tolerance) && std::isfinite(out.loss);
  return out;
}

}  // namespace avb
