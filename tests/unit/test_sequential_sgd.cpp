// The sequential engine of training (sgd/sequential_trainer.hpp): every protocol
// trained with failures as its case table's [sgd_sequential_16] says, its rows'
// invariants; results that
// do not depend on the thread count; diverging
// trials (overflowing, or with a gap far above its start) stopped and marked; the
// stable lr bound; a stop request; and a refused protocol.
// (tests/scripts/test_cross_engine_sgd.sh compares its traces with Open MPI's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>

#include "sgd/metrics.hpp"
#include "sgd/sequential_trainer.hpp"
#include "support/case_options.hpp"
#include "support/case_tables.hpp"
#include "support/catalog_coverage.hpp"
#include "test_support.hpp"

namespace avb {
namespace {

constexpr int kPeers = 16;

struct Case {
  const char* protocol;
  bool logistic;
  int local_steps;
  double rate;
};

// Unresolved: resolve(options_for(c), kPeers).
TrainingOptions options_for(const Case& c) {
  TrainingOptions o;
  o.protocol.name = c.protocol;
  o.protocol.random_groups.group_size = 3;  // random-groups: several groups at 16 peers
  if (c.logistic) {
    o.objective.kind = ObjectiveKind::logistic;
    o.objective.dim = 5;
    o.objective.samples_per_peer = 16;
    o.objective.separation = 1.0;
    o.objective.label_skew = 0.6;
    o.lr.lr = 0.5;
  } else {
    o.objective.kind = ObjectiveKind::quadratic;
    o.objective.dim = 4;
    o.objective.heterogeneity = 1.0;
    o.objective.gradient_noise = 0.3;
    o.lr.lr = 0.6 / kPeers;  // peer i's curvature grows to N: keeps local steps stable
  }
  o.fail_rate = c.rate;
  o.local_steps = c.local_steps;
  o.steps = 31;
  o.eval_every = 7;  // does not divide the steps: the last step gets a row of its own
  o.trials = 2;
  o.seed = 2027;
  o.targets = {0.5, 1e-2};
  return o;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// What every trial's rows must show: complete, not diverged, no failure waited
// (no detection timeout), and time that grows exactly when messages were sent.
void expect_row_invariants(const TrainingTrial& got) {
  EXPECT_TRUE(got.complete);
  EXPECT_FALSE(got.diverged);
  for (std::size_t r = 0; r < got.rows.size(); ++r) {
    const TrainingRow& g = got.rows[r];
    const std::string where = " (trial " + std::to_string(got.index) + ", step " + std::to_string(g.step) + ")";
    EXPECT_EQ(g.detection_time, 0.0) << where;
    if (r > 0) {
      EXPECT_GT(g.step, got.rows[r - 1].step) << where;
      EXPECT_EQ(g.time > got.rows[r - 1].time, g.bytes_sent > got.rows[r - 1].bytes_sent) << where;
      EXPECT_GE(g.time, got.rows[r - 1].time) << where;
    }
  }
}

class SequentialSgd : public ::testing::TestWithParam<test::TableCase> {};

// Every protocol trains on the sequential engine with failures, as its case table
// says (its rows and models are the MPI form's: tests/mpi/test_sgd_forms.cpp).
TEST_P(SequentialSgd, TrainsWithFailuresAndKeepsTheRowInvariants) {
  const TrainingOptions o = resolve(test::training_case(GetParam(), kPeers, [&](bool logistic) {
    return options_for(Case{GetParam().protocol.c_str(), logistic, 1, 0.0});
  }), kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  int failed_rounds = 0, consensus_rows = 0;
  for (int k = 0; k < o.trials; ++k) {
    const PopulationTrial got = run_training_sequential_trial(o, problem, kPeers, k);
    expect_row_invariants(got.record);
    for (const TrainingRow& row : got.record.rows) failed_rounds += row.alive < kPeers ? 1 : 0;
    // Not vacuous: the models moved, and apart (some rows with consensus > 0).
    EXPECT_NE(got.record.rows.back().distance, got.record.rows.front().distance);
    consensus_rows += static_cast<int>(std::count_if(got.record.rows.begin(), got.record.rows.end(),
                                                     [](const TrainingRow& row) { return row.consensus > 0; }));
  }
  EXPECT_GT(consensus_rows, 0);
  if (o.fail_rate > 0) {
    EXPECT_GT(failed_rounds, 0) << "failures were not exercised";
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, SequentialSgd,
                         ::testing::ValuesIn(test::table_cases("sgd_sequential_16", test::has_sequential_form)),
                         test::table_case_name);

class StopAfterFirstTrial : public TrainingObserver {
 public:
  void on_trial(const TrainingTrial& /*trial*/) override { stop_ = true; }
  bool stop_requested() override { return stop_; }

 private:
  bool stop_ = false;
};

// Every row of two runs of the same trials has the same bits (time and bytes too).
void expect_same_rows(const TrainingResult& one, const TrainingResult& other) {
  ASSERT_EQ(one.trials.size(), other.trials.size());
  for (std::size_t k = 0; k < one.trials.size(); ++k) {
    EXPECT_EQ(other.trials[k].index, static_cast<int>(k));
    ASSERT_EQ(one.trials[k].rows.size(), other.trials[k].rows.size());
    for (std::size_t r = 0; r < one.trials[k].rows.size(); ++r) {
      const TrainingRow &a = one.trials[k].rows[r], &b = other.trials[k].rows[r];
      EXPECT_TRUE(same_bits(a.loss, b.loss) && same_bits(a.consensus, b.consensus) && same_bits(a.time, b.time) &&
                  same_bits(a.accuracy, b.accuracy) && a.bytes_sent == b.bytes_sent)
          << "trial " << k << " row " << r;
    }
  }
  EXPECT_EQ(one.model, other.model);
}

TEST(SequentialSgdRun, ResultsDoNotDependOnTheThreadCount) {
  TrainingOptions o = options_for(Case{"moshpit", false, 2, 0.1});
  o.trials = 5;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  TrainingObserver ignore;
  const TrainingResult one = run_training_sequential(o, problem, kPeers, ignore, 1);
  const TrainingResult three = run_training_sequential(o, problem, kPeers, ignore, 3);
  ASSERT_EQ(one.trials.size(), 5u);
  expect_same_rows(one, three);
  ASSERT_EQ(one.model.size(), 4u);
  // The model is the last trial's peer 0's.
  const PopulationTrial last = run_training_sequential_trial(o, problem, kPeers, 4);
  EXPECT_TRUE(std::equal(one.model.begin(), one.model.end(), last.models.peer(0).begin()));
}

// --objective softmax on 320 Fashion-MNIST images over 16 peers, label-sorted
// (each peer sees one or two classes), with failures: the row invariants hold,
// the threads do not change a bit, and the model learns (accuracy on the t10k
// images above chance). Its rows equal the MPI engines': tests/mpi, SgdImages.
TEST(SequentialSgdImages, SoftmaxTrainsOnLabelSortedShardsWithFailuresOnAnyThreadCount) {
  TrainingOptions o = options_for(Case{"gossip", false, 2, 0.1});
  o.objective.kind = ObjectiveKind::softmax;
  o.objective.data_path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  o.objective.data_limit = 320;
  o.objective.split = DataSplit::sorted;
  o.test_data = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  o.lr.lr = 0.2;
  o.batch = 4;
  o.trials = 3;
  o.eval_every = o.steps;  // each evaluation classifies the 10,000 t10k images
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  EXPECT_EQ(problem.test_set_kind, "file");
  EXPECT_TRUE(problem.optimum.converged);
  TrainingObserver ignore;
  const TrainingResult one = run_training_sequential(o, problem, kPeers, ignore, 1);
  const TrainingResult two = run_training_sequential(o, problem, kPeers, ignore, 2);
  ASSERT_EQ(one.trials.size(), 3u);
  expect_same_rows(one, two);
  for (std::size_t k = 0; k < one.trials.size(); ++k) {
    expect_row_invariants(one.trials[k]);
    EXPECT_LT(one.trials[k].rows.back().relative_gap, one.trials[k].rows.front().relative_gap);
    EXPECT_GT(one.trials[k].rows.back().accuracy, 0.2);
  }
  EXPECT_EQ(one.model.size(), 7850u);
}

// --objective mlp (784-32-10) on 2,000 images over 16 peers, iid, all-reduce with
// failures: the loss falls, the threads do not change a bit (trials on threads of
// their own, or one trial's local steps split over two), and the t10k test
// accuracy ends well above chance.
TEST(SequentialSgdImages, MlpLearnsOnAnyThreadCount) {
  TrainingOptions o = options_for(Case{"allreduce", false, 2, 0.1});
  o.objective.kind = ObjectiveKind::mlp;
  o.objective.hidden = 32;
  o.objective.data_path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  o.objective.data_limit = 2000;
  o.test_data = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  o.steps = 150;
  o.lr.lr = 0.2;
  o.batch = 8;
  o.trials = 2;
  o.eval_every = o.steps;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  EXPECT_EQ(problem.optimum.loss, 0.0);  // the lower bound: relative_gap is f(x) / f(x_0)
  TrainingObserver ignore;
  const TrainingResult one = run_training_sequential(o, problem, kPeers, ignore, 1);
  const TrainingResult two = run_training_sequential(o, problem, kPeers, ignore, 2);
  ASSERT_EQ(one.trials.size(), 2u);
  expect_same_rows(one, two);
  for (const TrainingTrial& trial : one.trials) {
    expect_row_invariants(trial);
    EXPECT_NEAR(trial.rows.front().relative_gap, 1.0, 1e-15);
    EXPECT_LT(trial.rows.back().relative_gap, 0.5);
    EXPECT_GT(trial.rows.back().accuracy, 0.65);
  }
  EXPECT_EQ(one.model.size(), 32u * 785 + 10 * 33);
  // One trial on two threads: steps this heavy (peers x batch x parameters) split
  // their peers over both, with the same bits.
  o.objective.hidden = 64;
  o.trials = 1;
  o.batch = 32;
  o.steps = 20;
  o.eval_every = 10;
  o = resolve(o, kPeers);
  const Problem heavy = build_problem_sequential(o, kPeers);
  expect_same_rows(run_training_sequential(o, heavy, kPeers, ignore, 1),
                   run_training_sequential(o, heavy, kPeers, ignore, 2));
}

// --step-flops on the sequential engine: every local step waits for the slowest
// alive peer's work at the host speed (a straggler's slowed down), as under SMPI;
// the values do not change.
TEST(SequentialSgdRun, StepFlopsChargeTheSlowestAlivePeerEveryStep) {
  TrainingOptions o = options_for(Case{"moshpit", false, 3, 0.0});
  o.steps = 30;
  o.eval_every = 6;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  const PlatformModel platform{.host_speed = 5e8};
  const TrainingTrial idle = run_training_sequential_trial(o, problem, kPeers, 0, nullptr, platform).record;
  o.step_flops = 1e6;
  o.stragglers = {.fraction = 0.25, .slowdown = 6};
  const TrainingTrial busy = run_training_sequential_trial(o, problem, kPeers, 0, nullptr, platform).record;
  ASSERT_EQ(busy.rows.size(), idle.rows.size());
  for (std::size_t r = 0; r < idle.rows.size(); ++r) {
    EXPECT_TRUE(same_bits(busy.rows[r].loss, idle.rows[r].loss)) << "row " << r;
    EXPECT_NEAR(busy.rows[r].time - idle.rows[r].time, busy.rows[r].step * 6e6 / 5e8, 1e-12) << "row " << r;
  }
}

// A model that overflows between two evaluations: the first row after step 0 is
// not finite, and the trial stops there.
TEST(SequentialSgdRun, ADivergingTrialIsStoppedAndMarked) {
  TrainingOptions o = options_for(Case{"gossip", false, 1, 0.0});
  o.lr.lr = 50.0;  // curvature up to N = 16: |1 - lr * curvature| >> 1
  o.steps = 2000;
  o.eval_every = 500;  // the gap grows ~6e5-fold a step: +inf long before step 500
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  const TrainingTrial trial = run_training_sequential_trial(o, problem, kPeers, 0).record;
  EXPECT_TRUE(trial.diverged);
  ASSERT_EQ(trial.rows.size(), 2u);
  EXPECT_EQ(trial.rows.back().step, 500);
  EXPECT_FALSE(std::isfinite(trial.rows.back().loss) && std::isfinite(trial.rows.back().distance) &&
               std::isfinite(trial.rows.back().gap));
  EXPECT_TRUE(std::isfinite(trial.rows[0].distance));
}

// A finite model whose gap has grown past kDivergenceFactor times the widest gap
// between x_0 and the peers' own optima is diverged too (TrainingMetrics::diverged):
// the trial stops at the first evaluation past it, long before its model would
// overflow, rather than reporting a relative gap such as 1e40 as a result.
TEST(SequentialSgdRun, AGapFarAboveItsStartIsDivergence) {
  TrainingOptions o = options_for(Case{"gossip", false, 1, 0.0});
  o.protocol.topology = parse_topology("ring");  // slow mixing: averaging cannot undo the stiffest peer's steps
  o.lr.lr = 0.2;  // above 2/L = 0.125 (L = N = 16): the stiffest peer's error grows 2.2-fold a step
  o.steps = 2000;
  o.eval_every = 1;
  o = resolve(o, kPeers);
  ASSERT_LT(*stable_lr_bound(o, kPeers), o.lr.lr);
  const Problem problem = build_problem_sequential(o, kPeers);
  const double limit = TrainingMetrics(problem).divergence_relative_gap();
  EXPECT_GE(limit, TrainingMetrics::kDivergenceFactor);  // the box holds x_0
  EXPECT_LT(limit, 1e13);  // 6.4e10: the box is wide (peer 1's own optimum is sqrt(N) b_1)
  const TrainingTrial trial = run_training_sequential_trial(o, problem, kPeers, 0).record;
  EXPECT_TRUE(trial.diverged);
  EXPECT_TRUE(trial.complete);
  ASSERT_GE(trial.rows.size(), 2u);
  const TrainingRow& last = trial.rows.back();
  EXPECT_LT(last.step, 200);
  EXPECT_TRUE(std::isfinite(last.loss) && std::isfinite(last.distance) && std::isfinite(last.consensus));
  EXPECT_GT(last.relative_gap, limit);
  for (std::size_t r = 0; r + 1 < trial.rows.size(); ++r) EXPECT_LE(trial.rows[r].relative_gap, limit) << "row " << r;
  EXPECT_EQ(trial.rows[0].relative_gap, 1.0);  // x_0 = 0: the gap at step 0, by definition
  for (const TargetResult& t : trial.targets) EXPECT_FALSE(t.reached);
}

// The widest gap of the box between x_0 = 0 and the peers' own optima b_i / a_i,
// checked by hand on a 2-peer, 1-coordinate quadratic: a = (1, 2), b = (3, -2),
// own optima 3 and -1, H = (1 + 4)/2, x* = (1*3 + 2*(-2))/(1 + 4) = -0.2; the far
// end of [-1, 3] from x* is 3: widest gap 2.5/2 * 3.2^2 = 12.8; the gap at 0 is
// 2.5/2 * 0.04 = 0.05; the limit is 1e6 * 12.8 / 0.05.
TEST(TrainingMetricsDivergence, WidestGapOverThePeersOptima) {
  Problem problem;
  Eigen::MatrixXd a(1, 2), b(1, 2);
  a << 1.0, 2.0;
  b << 3.0, -2.0;
  problem.pooled = std::make_unique<QuadraticObjective>(a, b, 0.0, 2);
  problem.optimum.x = Eigen::VectorXd::Constant(1, -0.2);
  problem.optimum.loss = problem.pooled->loss(problem.optimum.x);
  problem.initial_loss = problem.pooled->loss(Eigen::VectorXd::Zero(1));
  const TrainingMetrics m(problem);
  EXPECT_NEAR(m.divergence_relative_gap(), 1e6 * 12.8 / 0.05, 1e-3);
  TrainingRow row;
  row.loss = row.distance = 1.0;
  row.gap = 1e6 * 12.8 * (1 - 1e-12);
  EXPECT_FALSE(m.diverged(row, 1.0));
  row.gap = 1e6 * 12.8 * (1 + 1e-12);
  EXPECT_TRUE(m.diverged(row, 1.0));
  row.gap = 1.0;
  row.distance = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(m.diverged(row, 1.0));
}

// The bound the app warns against (sgd_bench: "--lr: ... is above 2(1 + momentum)/L"):
// the EPFL preset's stiffest peer has curvature N, its pooled problem
// (N + 1)(2N + 1)/(6N), which only allreduce with --local-steps 1 sees.
TEST(StableLrBound, FromTheQuadraticsCurvature) {
  TrainingOptions o;
  o.protocol.name = "gossip";
  EXPECT_DOUBLE_EQ(*stable_lr_bound(o, 1024), 2.0 / 1024);
  o.momentum = 0.5;
  EXPECT_DOUBLE_EQ(*stable_lr_bound(o, 1024), 3.0 / 1024);
  o.momentum = 0.0;
  o.protocol.name = "allreduce";
  EXPECT_NEAR(*stable_lr_bound(o, 1024), 2.0 * 6 * 1024 / (1025.0 * 2049.0), 1e-15);
  o.local_steps = 2;
  EXPECT_DOUBLE_EQ(*stable_lr_bound(o, 1024), 2.0 / 1024);
  o.objective.preset = QuadraticPreset::conditioned;
  o.objective.condition = 1e4;
  EXPECT_DOUBLE_EQ(*stable_lr_bound(o, 1024), 2.0 / 1e4);
  o.objective.kind = ObjectiveKind::logistic;
  EXPECT_FALSE(stable_lr_bound(o, 1024).has_value());
}

TEST(SequentialSgdRun, StopRequestEndsTheRun) {
  TrainingOptions o = options_for(Case{"gossip", false, 1, 0.0});
  o.trials = 40;
  o.steps = 3000;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  StopAfterFirstTrial observer;
  const TrainingResult result = run_training_sequential(o, problem, kPeers, observer, 2);
  EXPECT_TRUE(result.stopped);
  ASSERT_GE(result.trials.size(), 1u);
  EXPECT_LT(result.trials.size(), 40u);
  EXPECT_TRUE(result.trials.front().complete);
}

// A protocol the catalog gains is trained on the sequential engine here, or this
// fails naming it.
TEST(SequentialSgdCoverage, EveryProtocolWithASequentialFormHasCases) {
  EXPECT_EQ(test::protocols_without_cases("SequentialSgd", test::has_sequential_form), std::vector<std::string>{});
}

}  // namespace
}  // namespace avb
