// The sequential engine of training (sgd/sequential_trainer.hpp) against the SGD
// oracle (tests/oracle/sgd_oracle): every peer's final model to the last bit,
// every row's counters exactly and its metrics to 1e-12 (the oracle measures in
// two passes, the engines in one tree), for several protocols with failures on
// both objectives; results that do not depend on the thread count; a diverging
// trial stopped and marked; a stop request; and a refused protocol.
// (tests/scripts/test_cross_engine_sgd.sh compares its traces with Open MPI's.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <string>

#include "sgd/sequential_trainer.hpp"
#include "sgd_oracle.hpp"
#include "test_support.hpp"

namespace avb {
namespace {

constexpr int kPeers = 16;

struct Case {
  const char* protocol;
  bool logistic;
  int local_steps;
  double rate;
  const char* kind = "transient";
  double momentum = 0.0;
  int batch = 1;
  const char* semantics = "default";
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.protocol << "/" << (c.logistic ? "logistic" : "quadratic") << "/H=" << c.local_steps
            << "/p=" << c.rate << "/" << c.kind << "/momentum=" << c.momentum << "/B=" << c.batch << "/"
            << c.semantics;
}

// Unresolved (the oracle resolves its options itself).
TrainingOptions options_for(const Case& c) {
  TrainingOptions o;
  o.protocol.name = c.protocol;
  if (std::string(c.semantics) != "default") o.protocol.on_failure = parse_failure_semantics(c.semantics);
  o.protocol.group_size = 3;  // random-groups: several groups at 16 peers
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
  o.failure = parse_failure_kind(c.kind);
  o.local_steps = c.local_steps;
  o.momentum = c.momentum;
  o.batch = c.batch;
  o.steps = 31;
  o.eval_every = 7;  // does not divide the steps: the last step gets a row of its own
  o.trials = 2;
  o.seed = 2027;
  o.targets = {0.5, 1e-2};
  return o;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Relative 1e-12, or absolute 1e-12 below `scale` (a gap or consensus near 0 is
// only known to rounding of the larger terms).
void expect_close(const char* name, double got, double want, const std::string& where, double scale = 1.0) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << name << where;
    return;
  }
  EXPECT_LE(std::fabs(got - want), 1e-12 * std::max({1.0, std::fabs(want), scale}))
      << name << " " << got << " != " << want << where;
}

void expect_rows_match(const TrainingTrial& got, const TrainingTrial& want) {
  ASSERT_EQ(got.rows.size(), want.rows.size()) << "trial " << want.index;
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_TRUE(got.complete);
  EXPECT_FALSE(got.diverged);
  for (std::size_t r = 0; r < want.rows.size(); ++r) {
    const TrainingRow &g = got.rows[r], &w = want.rows[r];
    const std::string where = " (trial " + std::to_string(want.index) + ", step " + std::to_string(w.step) + ")";
    EXPECT_EQ(g.step, w.step) << where;
    EXPECT_EQ(g.round, w.round) << where;
    EXPECT_EQ(g.alive, w.alive) << where;
    EXPECT_EQ(g.groups, w.groups) << where;
    EXPECT_EQ(g.failed_groups, w.failed_groups) << where;
    EXPECT_EQ(g.decode_failures, w.decode_failures) << where;
    EXPECT_EQ(g.bytes_sent, w.bytes_sent) << where;
    expect_close("loss", g.loss, w.loss, where);
    expect_close("gap", g.gap, w.gap, where);
    expect_close("relative_gap", g.relative_gap, w.relative_gap, where);
    expect_close("distance", g.distance, w.distance, where);
    expect_close("consensus", g.consensus, w.consensus, where, w.distance);
    expect_close("accuracy", g.accuracy, w.accuracy, where);
    EXPECT_EQ(g.detection_time, 0.0) << where;
    // time: the rounds' estimate, growing exactly when messages were sent.
    if (r > 0) {
      EXPECT_EQ(g.time > got.rows[r - 1].time, g.bytes_sent > got.rows[r - 1].bytes_sent) << where;
      EXPECT_GE(g.time, got.rows[r - 1].time) << where;
    }
  }
  ASSERT_EQ(got.targets.size(), want.targets.size());
  for (std::size_t t = 0; t < want.targets.size(); ++t) {
    EXPECT_EQ(got.targets[t].rounds, want.targets[t].rounds) << "target " << want.targets[t].target;
    EXPECT_EQ(got.targets[t].reached, want.targets[t].reached) << "target " << want.targets[t].target;
  }
}

class SequentialSgd : public ::testing::TestWithParam<Case> {};

TEST_P(SequentialSgd, ModelsHaveTheOraclesBitsAndRowsItsValues) {
  const TrainingOptions raw = options_for(GetParam());
  const TrainingOptions o = resolve(raw, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  int failed_rounds = 0, consensus_rows = 0;
  for (int k = 0; k < o.trials; ++k) {
    const PopulationTrial got = run_training_sequential_trial(o, problem, kPeers, k);
    const oracle::TrainingOutcome want = oracle::run_training_trial(raw, kPeers, k);
    expect_rows_match(got.record, want.trial);
    for (int i = 0; i < kPeers; ++i)
      for (int c = 0; c < problem.pooled->dim(); ++c)
        ASSERT_TRUE(same_bits(got.models.peer(i)[static_cast<std::size_t>(c)], want.models[i][c]))
            << "trial " << k << " peer " << i << " coordinate " << c << ": "
            << got.models.peer(i)[static_cast<std::size_t>(c)] << " != " << want.models[i][c];
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

INSTANTIATE_TEST_SUITE_P(
    Protocols, SequentialSgd,
    ::testing::Values(Case{"allreduce", false, 1, 0.2, "transient", 0.5, 2, "survivors"},
                      Case{"allreduce", true, 3, 0.1, "permanent"},
                      Case{"moshpit", true, 1, 0.2},
                      Case{"moshpit", false, 3, 0.2, "transient", 0.9, 1, "partial"},
                      Case{"gossip", false, 1, 0.2, "transient", 0.5},
                      Case{"gossip", true, 2, 0.1},
                      Case{"pushsum", true, 1, 0.2},
                      Case{"pushsum", false, 3, 0.1, "permanent", 0.0, 2},
                      Case{"random-groups", false, 1, 0.2},
                      Case{"random-groups", true, 3, 0.2, "transient", 0.0, 1, "partial"}));

class StopAfterFirstTrial : public TrainingObserver {
 public:
  void on_trial(const TrainingTrial& /*trial*/) override { stop_ = true; }
  bool stop_requested() override { return stop_; }

 private:
  bool stop_ = false;
};

TEST(SequentialSgdRun, ResultsDoNotDependOnTheThreadCount) {
  TrainingOptions o = options_for(Case{"moshpit", false, 2, 0.1});
  o.trials = 5;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  TrainingObserver ignore;
  const TrainingResult one = run_training_sequential(o, problem, kPeers, ignore, 1);
  const TrainingResult three = run_training_sequential(o, problem, kPeers, ignore, 3);
  ASSERT_EQ(one.trials.size(), 5u);
  ASSERT_EQ(three.trials.size(), 5u);
  for (std::size_t k = 0; k < one.trials.size(); ++k) {
    EXPECT_EQ(three.trials[k].index, static_cast<int>(k));
    ASSERT_EQ(one.trials[k].rows.size(), three.trials[k].rows.size());
    for (std::size_t r = 0; r < one.trials[k].rows.size(); ++r) {
      const TrainingRow &a = one.trials[k].rows[r], &b = three.trials[k].rows[r];
      EXPECT_TRUE(same_bits(a.loss, b.loss) && same_bits(a.consensus, b.consensus) && same_bits(a.time, b.time) &&
                  a.bytes_sent == b.bytes_sent)
          << "trial " << k << " row " << r;
    }
  }
  ASSERT_EQ(one.model.size(), 4u);
  EXPECT_EQ(one.model, three.model);
  // The model is the last trial's peer 0's.
  const PopulationTrial last = run_training_sequential_trial(o, problem, kPeers, 4);
  EXPECT_TRUE(std::equal(one.model.begin(), one.model.end(), last.models.peer(0).begin()));
}

TEST(SequentialSgdRun, ADivergingTrialIsStoppedAndMarked) {
  TrainingOptions o = options_for(Case{"gossip", false, 1, 0.0});
  o.lr.lr = 50.0;  // curvature up to N = 16: |1 - lr * curvature| >> 1
  o.steps = 2000;
  o.eval_every = 1;
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  const TrainingTrial trial = run_training_sequential_trial(o, problem, kPeers, 0).record;
  EXPECT_TRUE(trial.diverged);
  ASSERT_GE(trial.rows.size(), 2u);
  EXPECT_LT(trial.rows.back().step, o.steps);
  EXPECT_FALSE(std::isfinite(trial.rows.back().loss) && std::isfinite(trial.rows.back().distance) &&
               std::isfinite(trial.rows.back().gap));
  for (std::size_t r = 0; r + 1 < trial.rows.size(); ++r) EXPECT_TRUE(std::isfinite(trial.rows[r].distance));
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

TEST(SequentialSgdRun, RefusesAProtocolWithoutASequentialForm) {
  TrainingOptions o = options_for(Case{"gossip", false, 1, 0.0});
  o.protocol = {};
  o.protocol.name = "swarm";
  o = resolve(o, kPeers);
  const Problem problem = build_problem_sequential(o, kPeers);
  TrainingObserver ignore;
  const std::string message = test::config_error([&] { run_training_sequential(o, problem, kPeers, ignore, 2); });
  EXPECT_TRUE(test::starts_with(message, "--engine sequential: protocol swarm has no sequential form")) << message;
}

}  // namespace
}  // namespace avb
