// DiLoCo's outer loop (--outer-optimizer) on the sequential engine: outer SGD
// with learning rate 1 and no momentum is local SGD bit for bit, whatever the
// protocol and the failures; and Nesterov's outer step over an all-reduce follows
// the recurrence of the paper, computed here from the peers' affine gradients.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <Eigen/Dense>

#include "sgd/sequential_trainer.hpp"
#include "test_support.hpp"

namespace avb {
namespace outer_test {  // a unity build joins this file to others with names of their own

constexpr int kPeers = 8;

TrainingOptions logistic_run(const std::string& protocol, OuterOptions outer) {
  TrainingOptions o;
  o.protocol.name = protocol;
  if (protocol == "gossip") o.protocol.topology = parse_topology("ring");
  if (protocol == "moshpit") o.protocol.on_failure = FailureSemantics::partial;
  if (protocol == "choco") o.protocol.quantizer = parse_quantizer("fp16");
  o.objective.kind = ObjectiveKind::logistic;
  o.objective.label_skew = 0.8;
  o.fail_rate = 0.1;
  o.local_steps = 4;
  o.steps = 60;
  o.momentum = 0.5;
  o.lr.lr = 0.5;
  o.eval_every = 5;
  o.trials = 1;
  o.seed = 77;
  o.outer = outer;
  return resolve(o, kPeers);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(OuterOptimizer, SgdWithLearningRateOneAndNoMomentumIsLocalSgdBitForBit) {
  for (const char* protocol : {"allreduce", "gossip", "moshpit", "random-groups", "pairwise", "pushsum", "choco"}) {
    SCOPED_TRACE(protocol);
    const TrainingOptions local = logistic_run(protocol, {});
    const TrainingOptions outer = logistic_run(protocol, {OuterOptimizer::sgd, 1.0, 0.0});
    const Problem problem = build_problem_sequential(local, kPeers);
    const PopulationTrial a = run_training_sequential_trial(local, problem, kPeers, 0);
    const PopulationTrial b = run_training_sequential_trial(outer, problem, kPeers, 0);
    ASSERT_EQ(a.record.rows.size(), b.record.rows.size());
    for (std::size_t r = 0; r < a.record.rows.size(); ++r) {
      EXPECT_TRUE(same_bits(a.record.rows[r].relative_gap, b.record.rows[r].relative_gap)) << "row " << r;
      EXPECT_TRUE(same_bits(a.record.rows[r].consensus, b.record.rows[r].consensus)) << "row " << r;
      EXPECT_EQ(a.record.rows[r].bytes_sent, b.record.rows[r].bytes_sent) << "row " << r;
    }
    EXPECT_EQ(a.models.values, b.models.values);
    // Not vacuous: another outer step moves the models elsewhere.
    const TrainingOptions other = logistic_run(protocol, {OuterOptimizer::sgd, 0.5, 0.0});
    EXPECT_NE(run_training_sequential_trial(other, problem, kPeers, 0).models.values, a.models.values);
  }
}

// Each f_i's gradient A_i x - c_i, read off the objective (it is affine).
struct Affine {
  Eigen::MatrixXd a;
  Eigen::VectorXd c;
};
Affine affine(const Objective& f, int d) {
  Affine g{Eigen::MatrixXd(d, d), Eigen::VectorXd(d)};
  Eigen::VectorXd zero = Eigen::VectorXd::Zero(d), g0(d), gk(d);
  f.gradient(zero, g0);
  g.c = -g0;
  for (int k = 0; k < d; ++k) {
    f.gradient(Eigen::VectorXd::Unit(d, k), gk);
    g.a.col(k) = gk - g0;
  }
  return g;
}

TEST(OuterOptimizer, NesterovOverAllreduceFollowsDiLoCosRecurrence) {
  constexpr int kDim = 3, kH = 5, kRounds = 12;
  TrainingOptions o;
  o.protocol.name = "allreduce";
  o.objective.kind = ObjectiveKind::quadratic;
  o.objective.dim = kDim;
  o.objective.heterogeneity = 3.0;
  o.objective.gradient_noise = 0.0;  // exact gradients: the recurrence is deterministic
  o.lr.lr = 0.05;
  o.local_steps = kH;
  o.steps = kH * kRounds;
  o.eval_every = kH;
  o.trials = 1;
  o.outer = {OuterOptimizer::nesterov, 0.7, 0.9};  // DiLoCo's
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  std::vector<Affine> f;
  for (const auto& peer : problem.peers) f.push_back(affine(*peer, kDim));

  // theta: the shared anchor; v: the outer momentum; each round H gradient steps
  // from theta on every f_i, their mean m, D = theta - m, and Nesterov's step.
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(kDim), v = Eigen::VectorXd::Zero(kDim);
  std::vector<double> expected;
  for (int r = 0; r < kRounds; ++r) {
    Eigen::VectorXd m = Eigen::VectorXd::Zero(kDim);
    for (const Affine& g : f) {
      Eigen::VectorXd x = theta;
      for (int s = 0; s < kH; ++s) x -= o.lr.lr * (g.a * x - g.c);
      m += x / kPeers;
    }
    const Eigen::VectorXd d = theta - m;
    v = o.outer.momentum * v + d;
    theta -= o.outer.lr * (d + o.outer.momentum * v);
    expected.push_back((problem.pooled->loss(theta) - problem.optimum.loss) /
                       (problem.initial_loss - problem.optimum.loss));
  }
  const TrainingTrial got = run_training_sequential_trial(o, problem, kPeers, 0).record;
  ASSERT_EQ(got.rows.size(), static_cast<std::size_t>(kRounds + 1));
  for (int r = 0; r < kRounds; ++r)
    EXPECT_NEAR(got.rows[static_cast<std::size_t>(r + 1)].relative_gap, expected[static_cast<std::size_t>(r)],
                1e-10 * expected[0])
        << "after round " << r + 1;
  // Not vacuous: the outer step differs from plain averaging (theta = m).
  o.outer = {};
  const TrainingTrial plain = run_training_sequential_trial(o, problem, kPeers, 0).record;
  EXPECT_GT(std::abs(plain.rows[3].relative_gap - got.rows[3].relative_gap), 1e-3 * expected[0]);
}

}  // namespace outer_test
}  // namespace avb
