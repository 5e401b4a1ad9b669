// Gradient tracking (--gradient-tracking) against decentralized SGD on a
// heterogeneous quadratic with exact gradients and a constant learning rate:
// D-SGD settles at a fixed point away from x*, whose gap is predicted here by
// solving the fixed-point equations of its update, and tracking reaches x*.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include "sgd/metrics.hpp"
#include "sgd/sequential_trainer.hpp"
#include "test_support.hpp"

namespace avb {
namespace {

constexpr int kPeers = 16;
constexpr int kDim = 4;
constexpr double kLr = 0.05;

TrainingOptions ring_quadratic(bool tracking) {
  TrainingOptions o;
  o.protocol.name = "gossip";
  o.protocol.topology = parse_topology("ring");
  o.objective.kind = ObjectiveKind::quadratic;
  o.objective.dim = kDim;
  o.objective.heterogeneity = 5.0;  // the b_i spread: the peers' own optima differ
  o.objective.gradient_noise = 0.0;  // exact gradients: only the floor of the method remains
  o.lr.lr = kLr;
  o.steps = 3000;
  o.eval_every = 1000;
  o.trials = 1;
  o.targets = {1e-3, 1e-12};
  o.gradient_tracking = tracking;
  return resolve(o, kPeers);
}

// The relative gap at D-SGD's fixed point: x = W (x - lr (A x - c)) over all peers,
// each f_i's gradient A_i x - c_i read off the objective (it is affine), W the ring's
// uniform weights 1/3 (sim/topology.hpp); then the gap of the peers' mean.
double predicted_floor(const Problem& problem) {
  const int nd = kPeers * kDim;
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(nd, nd), w = Eigen::MatrixXd::Zero(nd, nd);
  Eigen::VectorXd c(nd);
  for (int i = 0; i < kPeers; ++i) {
    const Objective& f = *problem.peers[static_cast<std::size_t>(i)];
    Eigen::VectorXd zero = Eigen::VectorXd::Zero(kDim), g0(kDim), g(kDim);
    f.gradient(zero, g0);
    c.segment(i * kDim, kDim) = -g0;
    for (int k = 0; k < kDim; ++k) {
      Eigen::VectorXd e = Eigen::VectorXd::Unit(kDim, k);
      f.gradient(e, g);
      a.block(i * kDim, i * kDim, kDim, kDim).col(k) = g - g0;
    }
    for (int j : {i - 1, i, i + 1})
      w.block(i * kDim, ((j + kPeers) % kPeers) * kDim, kDim, kDim) += Eigen::MatrixXd::Identity(kDim, kDim) / 3.0;
  }
  const Eigen::MatrixXd system = Eigen::MatrixXd::Identity(nd, nd) - w * (Eigen::MatrixXd::Identity(nd, nd) - kLr * a);
  const Eigen::VectorXd x = system.fullPivLu().solve(kLr * (w * c));
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(kDim);
  for (int i = 0; i < kPeers; ++i) mean += x.segment(i * kDim, kDim) / kPeers;
  return (problem.pooled->loss(mean) - problem.optimum.loss) / (problem.initial_loss - problem.optimum.loss);
}

TEST(GradientTracking, ReachesTheOptimumWhereDecentralizedSgdStaysAtItsPredictedFloor) {
  const TrainingOptions sgd = ring_quadratic(false), tracking = ring_quadratic(true);
  const Problem problem = build_problem_sequential(sgd, kPeers);
  const double floor = predicted_floor(problem);
  ASSERT_GT(floor, 1e-3);  // a floor worth the name: the heterogeneity shows

  const TrainingTrial plain = run_training_sequential_trial(sgd, problem, kPeers, 0).record;
  const double settled = plain.rows.back().relative_gap;
  EXPECT_NEAR(settled, floor, 1e-9 * floor) << "D-SGD's gap after " << sgd.steps << " steps";
  EXPECT_NEAR(plain.rows[plain.rows.size() - 2].relative_gap, settled, 1e-9 * floor) << "settled a 1000 steps ago";

  const TrainingTrial tracked = run_training_sequential_trial(tracking, problem, kPeers, 0).record;
  EXPECT_LT(tracked.rows.back().relative_gap, 1e-12);
  EXPECT_TRUE(tracked.targets.back().reached);
  // The round mixes the tracker too: twice the bytes of the model alone.
  EXPECT_EQ(tracked.rows.back().bytes_sent, 2 * plain.rows.back().bytes_sent);
}

// The trackers keep the sum of the peers' latest gradients (W is doubly stochastic):
// after 7 steps, sum_i z_i = sum_i g_i(x_i) at the models the 7th step started from,
// which are those a run of 6 steps ends with.
TEST(GradientTracking, TheTrackersSumIsTheGradientsSum) {
  TrainingOptions o = ring_quadratic(true);
  o.steps = 7;
  const Problem problem = build_problem_sequential(o, kPeers);
  const PopulationTrial t = run_training_sequential_trial(o, problem, kPeers, 0);
  ASSERT_EQ(t.models.dim, 2 * kDim);
  TrainingOptions six = o;
  six.steps = 6;
  const PopulationTrial before = run_training_sequential_trial(six, problem, kPeers, 0);
  Eigen::VectorXd trackers = Eigen::VectorXd::Zero(kDim), gradients = Eigen::VectorXd::Zero(kDim), g(kDim);
  for (int i = 0; i < kPeers; ++i) {
    const auto z = t.models.peer(i).subspan(kDim, kDim);
    for (int k = 0; k < kDim; ++k) trackers[k] += z[static_cast<std::size_t>(k)];
    const auto x = before.models.peer(i).first(kDim);
    problem.peers[static_cast<std::size_t>(i)]->gradient(
        Eigen::Map<const Eigen::VectorXd>(x.data(), kDim), g);
    gradients += g;
  }
  EXPECT_LT((trackers - gradients).norm(), 1e-12 * (1.0 + gradients.norm()));
}

}  // namespace
}  // namespace avb
