// DiLoCo's outer loop (--outer-optimizer) on the sequential engine: outer SGD
// with learning rate 1 and no momentum is local SGD bit for bit, whatever the
// protocol and the failures; and Nesterov's outer step over an all-reduce follows
// the recurrence of the paper, computed here from the peers' affine gradients;
// outer SGD over pairs is NoLoCo's update.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include <Eigen/Dense>

#include "core/rng.hpp"
#include "sgd/outer.hpp"
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

// The relative gap of a model of the pooled problem.
double relative_gap(const Problem& problem, const Eigen::VectorXd& x) {
  return (problem.pooled->loss(x) - problem.optimum.loss) / (problem.initial_loss - problem.optimum.loss);
}

// The trial's row after each round (one evaluation a round) against `expected`.
TrainingTrial expect_rows(const TrainingOptions& o, const Problem& problem, const std::vector<double>& expected) {
  const TrainingTrial got = run_training_sequential_trial(o, problem, kPeers, 0).record;
  EXPECT_EQ(got.rows.size(), expected.size() + 1);
  for (std::size_t r = 0; r < expected.size() && r + 1 < got.rows.size(); ++r)
    EXPECT_NEAR(got.rows[r + 1].relative_gap, expected[r], 1e-10 * expected[0]) << "after round " << r + 1;
  return got;
}

// Allreduce on a heterogeneous quadratic with exact gradients (the recurrences
// below are deterministic), H local steps a round, one evaluation a round.
TrainingOptions quadratic_allreduce(int dim, int h, int rounds, OuterOptions outer) {
  TrainingOptions o;
  o.protocol.name = "allreduce";
  o.objective.kind = ObjectiveKind::quadratic;
  o.objective.dim = dim;
  o.objective.heterogeneity = 3.0;
  o.objective.gradient_noise = 0.0;
  o.lr.lr = 0.05;
  o.local_steps = h;
  o.steps = h * rounds;
  o.eval_every = h;
  o.trials = 1;
  o.outer = outer;
  return o;
}

void nesterov_follows_the_recurrence(OuterMix mix) {
  constexpr int kDim = 3, kH = 5, kRounds = 12;
  TrainingOptions o = quadratic_allreduce(kDim, kH, kRounds, {OuterOptimizer::nesterov, 0.7, 0.9, 1, mix});  // DiLoCo's
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
    expected.push_back(relative_gap(problem, theta));
  }
  const TrainingTrial got = expect_rows(o, problem, expected);
  // Not vacuous: the outer step differs from plain averaging (theta = m).
  o.outer = {};
  const TrainingTrial plain = run_training_sequential_trial(o, problem, kPeers, 0).record;
  ASSERT_GT(got.rows.size(), 3u);
  EXPECT_GT(std::abs(plain.rows[3].relative_gap - got.rows[3].relative_gap), 1e-3 * expected[0]);
}

// Either way of mixing: the peers share their anchor, so mixing the pseudo-
// gradients and mixing the models give the same D (to rounding).
TEST(OuterOptimizer, NesterovOverAllreduceFollowsDiLoCosRecurrence) {
  for (OuterMix mix : {OuterMix::models, OuterMix::pseudo_gradients}) {
    SCOPED_TRACE(to_string(mix));
    nesterov_follows_the_recurrence(mix);
  }
}

// --outer-mix pseudo-gradients puts the --quantizer on the pseudo-gradient, as
// DiLoCo's low-bit variants do: few bits then cost DiLoCo little, where few-bit
// models cost it much more (8 peers, label-skewed logistic, 300 steps, H = 10).
TEST(OuterOptimizer, QuantizedPseudoGradientsKeepDiLoCosGap) {
  auto final_gap = [](OuterMix mix, const char* quantizer) {
    TrainingOptions o = logistic_run("allreduce", {OuterOptimizer::nesterov, 0.7, 0.9, 1, mix});
    o.protocol.quantizer = parse_quantizer(quantizer);
    o.fail_rate = o.momentum = 0.0;
    o.steps = o.eval_every = 300;  // one row at the end
    o.local_steps = 10;
    o.lr.lr = 0.2;
    o.batch = 8;
    o = resolve(o, kPeers);
    const Problem problem = build_problem_sequential(o, kPeers);
    return run_training_sequential_trial(o, problem, kPeers, 0).record.rows.back().relative_gap;
  };
  const double exact = final_gap(OuterMix::models, "none");
  EXPECT_NEAR(final_gap(OuterMix::pseudo_gradients, "none") / exact, 1.0, 1e-9);
  EXPECT_NEAR(final_gap(OuterMix::pseudo_gradients, "uniform8") / exact, 1.0, 0.1);
  // 4 bits (Streaming DiLoCo's): within 15 % on the pseudo-gradients, more than
  // twice the gap on the models.
  EXPECT_NEAR(final_gap(OuterMix::pseudo_gradients, "stochastic:4") / exact, 1.0, 0.15);
  EXPECT_GT(final_gap(OuterMix::models, "stochastic:4") / exact, 2.0);
}


// Streaming DiLoCo: with F = 2 fragments, round r mixes and steps only fragment
// (r - 1) mod 2; the other fragment goes on with its local steps. Simulated here
// peer by peer from the affine gradients.
TEST(OuterOptimizer, TwoFragmentsTakeTurnsAsStreamingDiLoCo) {
  constexpr int kDim = 3, kH = 4, kRounds = 10;
  TrainingOptions o = quadratic_allreduce(kDim, kH, kRounds, {OuterOptimizer::nesterov, 0.7, 0.9, 2});
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  std::vector<Affine> f;
  for (const auto& peer : problem.peers) f.push_back(affine(*peer, kDim));

  // Fragment 0 is coordinate 0, fragment 1 coordinates 1 and 2 ([f d / F, (f + 1) d / F)).
  const int begin[2] = {0, 1}, size[2] = {1, 2};
  std::vector<Eigen::VectorXd> x(kPeers, Eigen::VectorXd::Zero(kDim)), anchor = x, v = x;
  std::vector<double> expected;
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kPeers; ++i)
      for (int s = 0; s < kH; ++s) x[i] -= o.lr.lr * (f[i].a * x[i] - f[i].c);
    const int b = begin[r % 2], n = size[r % 2];
    Eigen::VectorXd m = Eigen::VectorXd::Zero(n);
    for (int i = 0; i < kPeers; ++i) m += x[i].segment(b, n) / kPeers;
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(kDim);
    for (int i = 0; i < kPeers; ++i) {
      const Eigen::VectorXd d = anchor[i].segment(b, n) - m;
      v[i].segment(b, n) = o.outer.momentum * v[i].segment(b, n) + d;
      x[i].segment(b, n) = anchor[i].segment(b, n) - o.outer.lr * (d + o.outer.momentum * v[i].segment(b, n));
      anchor[i].segment(b, n) = x[i].segment(b, n);
      mean += x[i] / kPeers;
    }
    expected.push_back(relative_gap(problem, mean));
  }
  const TrainingTrial got = expect_rows(o, problem, expected);
  ASSERT_EQ(got.rows.size(), static_cast<std::size_t>(kRounds + 1));
  EXPECT_GT(got.rows.back().consensus, 0.0);  // the fragment not mixed last differs across peers
  // Each round sends one fragment: the rounds of fragment 1 twice the bytes of fragment 0's.
  const std::uint64_t first = got.rows[1].bytes_sent, second = got.rows[2].bytes_sent - first;
  EXPECT_EQ(second, 2 * first);
}

// NoLoCo (Kolehmainen et al. 2025, arXiv 2506.10911): peers i of a random pair
// hold anchors phi_i and local models x_i (pseudo-gradients D_j = phi_j - x_j), and
// step  delta_i = alpha delta_i - beta mean_j D_j - gamma (phi_i - mean_j phi_j),
// phi_i += delta_i  (the authors' code has beta = gamma = the outer lr). Outer SGD
// after a round that mixes the pair's models is that update, with alpha = mu,
// beta = gamma = eta and delta_i = -eta u_i: the term pulling the anchors together
// comes from mixing models rather than pseudo-gradients.
TEST(OuterOptimizer, SgdOverPairsIsNoLoCosUpdate) {
  const Stream draws(5, StreamId::test);
  constexpr int d = 6;
  OuterOptions o;
  o.kind = OuterOptimizer::sgd;
  o.lr = 0.7;
  o.momentum = 0.3;
  auto vec = [&](std::uint64_t which) {
    std::vector<double> v(d);
    for (int k = 0; k < d; ++k) v[static_cast<std::size_t>(k)] = draws.normal(which, 0, static_cast<std::uint64_t>(k));
    return v;
  };
  std::vector<double> anchor[2] = {vec(1), vec(2)}, x[2] = {vec(3), vec(4)}, u[2] = {vec(5), vec(6)};
  std::vector<double> want[2] = {anchor[0], anchor[1]};
  for (int i = 0; i < 2; ++i)
    for (std::size_t k = 0; k < d; ++k) {
      const double mean_d = 0.5 * ((anchor[0][k] - x[0][k]) + (anchor[1][k] - x[1][k]));
      const double mean_phi = 0.5 * (anchor[0][k] + anchor[1][k]);
      const double delta = o.momentum * (-o.lr * u[i][k]) - o.lr * mean_d - o.lr * (anchor[i][k] - mean_phi);
      want[i][k] += delta;
    }
  std::vector<double> mixed(d);
  for (std::size_t k = 0; k < d; ++k) mixed[k] = 0.5 * (x[0][k] + x[1][k]);  // the pair's round
  for (int i = 0; i < 2; ++i) {
    std::vector<double> model = mixed;
    outer_step(o, model, anchor[i], u[i], true);
    for (std::size_t k = 0; k < d; ++k) {
      EXPECT_NEAR(model[k], want[i][k], 1e-14) << "peer " << i << ", coordinate " << k;
      EXPECT_EQ(anchor[i][k], model[k]);  // the next local steps start there
    }
  }
}

}  // namespace outer_test
}  // namespace avb
