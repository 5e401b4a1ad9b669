// The trainer's pieces that need no MPI: learning-rate schedules against hand
// values, option checks naming the flag, steps to a target, and the shard that
// rank 0 deals (logistic_peer) against the one each peer would build itself.
#include <gtest/gtest.h>

#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/blocks.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/objective.hpp"
#include "sgd/trainer.hpp"

namespace avb {
namespace {

using test::config_error;
using test::starts_with;

// ---- learning rate ------------------------------------------------------------------

// A learning rate as the flags set it (--lr-schedule, --lr, --lr-decay-steps, --lr-decay-factor).
LearningRate schedule(LrSchedule kind, double lr, int decay_steps, double decay_factor) {
  LearningRate rate;
  rate.schedule = kind;
  rate.lr = lr;
  rate.decay_steps = decay_steps;
  rate.decay_factor = decay_factor;
  return rate;
}

TEST(LearningRate, ConstantIsTheSameAtEveryStep) {
  const LearningRate lr = schedule(LrSchedule::constant, 0.25, 3, 0.1);
  for (std::int64_t s : {0, 1, 2, 3, 99, 1000000}) EXPECT_EQ(lr.at(s), 0.25) << "step " << s;
}

TEST(LearningRate, InverseIsLrTimesTOverStepPlusT) {
  LearningRate lr = schedule(LrSchedule::inverse, 0.2, 10, LearningRate{}.decay_factor);
  EXPECT_DOUBLE_EQ(lr.at(0), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(5), 0.2 * 10.0 / 15.0);
  EXPECT_DOUBLE_EQ(lr.at(10), 0.1);
  EXPECT_DOUBLE_EQ(lr.at(30), 0.05);
  EXPECT_DOUBLE_EQ(lr.at(190), 0.01);
  lr.decay_steps = 1;
  EXPECT_DOUBLE_EQ(lr.at(0), 0.2);
  EXPECT_DOUBLE_EQ(lr.at(1), 0.1);
  EXPECT_DOUBLE_EQ(lr.at(3), 0.05);
}

TEST(LearningRate, StepMultipliesByTheFactorEveryTSteps) {
  LearningRate lr = schedule(LrSchedule::step, 1.0, 3, 0.5);
  const std::vector<double> want = {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125};
  for (std::size_t s = 0; s < want.size(); ++s) EXPECT_DOUBLE_EQ(lr.at(static_cast<std::int64_t>(s)), want[s]) << s;
  lr = schedule(LrSchedule::step, 0.3, 100, 0.1);
  EXPECT_DOUBLE_EQ(lr.at(99), 0.3);
  EXPECT_DOUBLE_EQ(lr.at(100), 0.03);
  EXPECT_DOUBLE_EQ(lr.at(250), 0.003);
  lr.decay_factor = 1.0;  // the factor 1 is a constant rate
  EXPECT_DOUBLE_EQ(lr.at(12345), 0.3);
}

TEST(LearningRate, SchedulesParseBackAndBadNamesNameTheFlag) {
  for (LrSchedule s : {LrSchedule::constant, LrSchedule::inverse, LrSchedule::step})
    EXPECT_EQ(parse_lr_schedule(to_string(s)), s);
  const std::string e = config_error([] { parse_lr_schedule("cosine"); });
  EXPECT_TRUE(starts_with(e, "--lr-schedule: 'cosine'")) << e;
}

// ---- options ------------------------------------------------------------------------

std::string error_of(const TrainingOptions& o) {
  return config_error([&] { resolve(o, 8); });
}

// Geometric local steps: mean H, P(1) = 1/H, never below 1, keyed (the same draw
// for the same (seed, peer, round)), and fixed gives H. 200 000 draws: the
// standard error of the mean is sqrt(H(H - 1))/sqrt(200000) = 0.0087 at H = 4, so
// a 5-sigma band (false alarm about 6e-7).
TEST(LocalSteps, GeometricHasMeanHAndFixedIsH) {
  TrainingOptions o;
  o.local_steps = 4;
  EXPECT_EQ(local_steps_before(o, 9, 3, 7), 4);
  o.local_steps_dist = LocalStepsDist::geometric;
  const int draws = 200000;
  double sum = 0;
  int ones = 0, smallest = 1 << 30;
  for (int k = 0; k < draws; ++k) {
    const int steps = local_steps_before(o, 9, k % 100, k / 100 + 1);
    sum += steps;
    ones += steps == 1;
    smallest = std::min(smallest, steps);
  }
  EXPECT_EQ(smallest, 1);
  EXPECT_NEAR(sum / draws, 4.0, 5 * std::sqrt(4.0 * 3.0 / draws));
  EXPECT_NEAR(static_cast<double>(ones) / draws, 0.25, 5 * std::sqrt(0.25 * 0.75 / draws));
  EXPECT_EQ(local_steps_before(o, 9, 5, 11), local_steps_before(o, 9, 5, 11));
  o.local_steps = 1;
  EXPECT_EQ(local_steps_before(o, 9, 5, 11), 1);
  EXPECT_EQ(parse_local_steps_dist("geometric"), LocalStepsDist::geometric);
  EXPECT_TRUE(starts_with(config_error([] { parse_local_steps_dist("poisson"); }), "--local-steps-dist: 'poisson'"));
}

TEST(TrainingOptions, DefaultsResolve) {
  const TrainingOptions r = resolve(TrainingOptions{}, 8);
  EXPECT_EQ(r.protocol.name, "allreduce");
  EXPECT_TRUE(r.protocol.on_failure.has_value());
  EXPECT_EQ(r.targets, (std::vector<double>{1e-3, 1e-6}));
}

TEST(TrainingOptions, BadValuesNameTheFlag) {
  struct Bad {
    const char* flag;
    void (*set)(TrainingOptions&);
  };
  const std::vector<Bad> cases = {
      {"--local-steps", [](TrainingOptions& o) { o.local_steps = 0; }},
      {"--local-steps", [](TrainingOptions& o) { o.local_steps = -3; }},
      {"--batch", [](TrainingOptions& o) { o.batch = 0; }},
      {"--lr", [](TrainingOptions& o) { o.lr.lr = 0.0; }},
      {"--lr", [](TrainingOptions& o) { o.lr.lr = -0.1; }},
      {"--lr", [](TrainingOptions& o) { o.lr.lr = std::numeric_limits<double>::quiet_NaN(); }},
      {"--lr", [](TrainingOptions& o) { o.lr.lr = std::numeric_limits<double>::infinity(); }},
      {"--lr-decay-steps", [](TrainingOptions& o) { o.lr.decay_steps = 0; }},
      {"--lr-decay-factor", [](TrainingOptions& o) { o.lr.decay_factor = 0.0; }},
      {"--lr-decay-factor", [](TrainingOptions& o) { o.lr.decay_factor = 1.5; }},
      {"--lr-decay-factor", [](TrainingOptions& o) { o.lr.decay_factor = std::numeric_limits<double>::quiet_NaN(); }},
      {"--momentum", [](TrainingOptions& o) { o.momentum = 1.0; }},
      {"--momentum", [](TrainingOptions& o) { o.momentum = -0.1; }},
      {"--momentum", [](TrainingOptions& o) { o.momentum = std::numeric_limits<double>::quiet_NaN(); }},
      {"--eval-every", [](TrainingOptions& o) { o.eval_every = 0; }},
      {"--steps", [](TrainingOptions& o) { o.steps = -1; }},
      {"--trials", [](TrainingOptions& o) { o.trials = 0; }},
      {"--fail-rate", [](TrainingOptions& o) { o.fail_rate = 1.5; }},
      {"--target", [](TrainingOptions& o) { o.targets = {1e-3, 0.0}; }},
      {"--target", [](TrainingOptions& o) { o.targets = {}; }},
      // A test file needs a training file: quadratic and synthetic logistic refuse it.
      {"--test-data", [](TrainingOptions& o) { o.test_data = "test.svm"; }},
      {"--test-data",
       [](TrainingOptions& o) {
         o.objective.kind = ObjectiveKind::logistic;
         o.test_data = "test.svm";
       }},
      // The objective's and the protocol's own checks come through.
      {"--dim", [](TrainingOptions& o) { o.objective.dim = 0; }},
      {"--protocol", [](TrainingOptions& o) { o.protocol.name = "nope"; }},
  };
  for (const Bad& bad : cases) {
    TrainingOptions o;
    bad.set(o);
    const std::string e = error_of(o);
    EXPECT_TRUE(starts_with(e, std::string(bad.flag) + ":")) << "want " << bad.flag << ", got '" << e << "'";
  }
}

TEST(TrainingOptions, EdgeValuesResolve) {
  TrainingOptions o;
  o.steps = 0;
  o.momentum = 0.0;
  o.lr.decay_factor = 1.0;
  o.lr.decay_steps = 1;
  o.fail_rate = 1.0;
  EXPECT_EQ(error_of(o), "");
  o.objective.kind = ObjectiveKind::logistic;
  o.objective.data_path = "train.svm";  // not read by resolve
  o.test_data = "test.svm";
  EXPECT_EQ(error_of(o), "");
}

TEST(TrainingOptions, TargetsSortedDescendingWithoutDuplicates) {
  TrainingOptions o;
  o.targets = {1e-6, 1e-2, 1e-6, 1e-4};
  EXPECT_EQ(resolve(o, 4).targets, (std::vector<double>{1e-2, 1e-4, 1e-6}));
}

// ---- steps to target ----------------------------------------------------------------

std::vector<TrainingRow> rows_of(const std::vector<std::pair<int, double>>& steps_and_gaps) {
  std::vector<TrainingRow> rows;
  for (auto [step, gap] : steps_and_gaps) {
    TrainingRow row;
    row.step = step;
    row.relative_gap = gap;
    rows.push_back(row);
  }
  return rows;
}

TEST(StepsToTarget, FirstRowAtOrBelowTheTargetElseTheCap) {
  // Not monotone: the first row that gets there counts, even if a later one rises.
  const auto rows = rows_of({{0, 1.0}, {10, 0.5}, {20, 1e-3}, {30, 2e-3}, {37, 1e-4}});
  auto check = [&](double target, int steps, bool reached) {
    const TargetResult r = steps_to_target(rows, target);
    EXPECT_EQ(r.target, target);
    EXPECT_EQ(r.rounds, steps) << "target " << target;
    EXPECT_EQ(r.reached, reached) << "target " << target;
  };
  check(1.0, 0, true);      // the initial row already is at the target
  check(0.6, 10, true);
  check(1e-3, 20, true);    // "at or below": equality counts
  check(5e-4, 37, true);
  check(1e-4, 37, true);
  check(1e-5, 37, false);   // never: the cap is the last row's step
  const TargetResult none = steps_to_target({}, 1e-3);
  EXPECT_EQ(none.rounds, 0);
  EXPECT_FALSE(none.reached);
}

// ---- rank 0's shards ------------------------------------------------------------------

Dataset random_dataset(int m, int d, std::uint64_t which) {
  const Stream stream(which, StreamId::test);
  Dataset data;
  data.features.resize(m, d);
  data.labels.resize(m);
  for (int s = 0; s < m; ++s) {
    // 40% positive, scattered through the file, so the sorted split is uneven.
    data.labels[s] = stream.uniform(1, static_cast<std::uint64_t>(s), 0) < 0.4 ? 1.0 : -1.0;
    for (int k = 0; k < d; ++k)
      data.features(s, k) = stream.normal(2, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(k));
  }
  return data;
}

TEST(LogisticPeer, IsTheShardMakeObjectiveBuilds) {
  const Dataset data = random_dataset(43, 5, 3);  // 43 samples: unequal shards on 4 and 6 peers
  for (DataSplit split : {DataSplit::random, DataSplit::sorted})
    for (int n : {1, 4, 6, 43})
      for (int peer = 0; peer < n; ++peer) {
        ObjectiveOptions o;
        o.kind = ObjectiveKind::logistic;
        o.data_path = "in-memory.svm";  // only named in errors: the data is given
        o.split = split;
        const std::uint64_t seed = 17;
        const auto dealt = logistic_peer(o, data, peer, n, seed);
        const auto built = make_objective(o, peer, n, seed, &data);
        const auto* own = dynamic_cast<const LogisticObjective*>(built.get());
        ASSERT_NE(own, nullptr);
        const std::string where = std::string(to_string(split)) + " peer " + std::to_string(peer) + " of " +
                                  std::to_string(n);
        ASSERT_EQ(dealt->samples().samples(), own->samples().samples()) << where;
        ASSERT_EQ(dealt->dim(), own->dim()) << where;
        EXPECT_TRUE(dealt->samples().features == own->samples().features) << where;
        EXPECT_TRUE(dealt->samples().labels == own->samples().labels) << where;
        EXPECT_TRUE(dealt->weights() == own->weights()) << where;
        EXPECT_EQ(dealt->l2(), own->l2()) << where;
        EXPECT_EQ(dealt->counter_peer(), own->counter_peer()) << where;
      }
}

// core/blocks.hpp, which splits a sequential trial's heavy local steps: every
// index once, in contiguous blocks, and a block's exception reaches the caller
// after every block has ended.
TEST(ForBlocks, CoversEveryIndexOnceAndRethrowsAfterAllEnd) {
  for (int blocks : {1, 2, 3, 7, 50}) {
    std::vector<std::atomic<int>> seen(23);
    std::vector<int> first_of(static_cast<std::size_t>(std::min(blocks, 23)), -1);
    for_blocks(23, blocks, [&](int first, int last, int b) {
      first_of[static_cast<std::size_t>(b)] = first;
      for (int i = first; i < last; ++i) ++seen[static_cast<std::size_t>(i)];
    });
    for (const auto& count : seen) EXPECT_EQ(count.load(), 1) << blocks << " blocks";
    EXPECT_TRUE(std::is_sorted(first_of.begin(), first_of.end()));
  }
  std::atomic<int> ended = 0;
  EXPECT_THROW(for_blocks(10, 3,
                          [&](int, int, int b) {
                            ++ended;
                            if (b == 1) throw StopRequested();
                          }),
               StopRequested);
  EXPECT_EQ(ended.load(), 3);
}

}  // namespace
}  // namespace avb
