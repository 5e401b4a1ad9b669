// The local-SGD trainer's two forms against each other: build_problem +
// run_training on MPI_COMM_WORLD, every peer's final model gathered to rank 0 and
// compared there, with every recorded row, to the sequential engine's
// (run_training_sequential_trial). Also the acceptance criterion that allreduce
// every step without failures is centralized minibatch SGD (written out here,
// sharing no code with either form), a LIBSVM file dealt by rank 0,
// stop-at-target and the last evaluation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "world.hpp"
#include "run/averaging.hpp"
#include "sgd/libsvm.hpp"
#include "sgd/sequential_trainer.hpp"
#include "sgd/trainer.hpp"
#include "support/case_options.hpp"
#include "support/case_tables.hpp"
#include "support/catalog_coverage.hpp"

namespace avb {
namespace {

using test::world_rank;
using test::world_size;

// ---- problems ---------------------------------------------------------------------

// Koloskova et al.'s quadratic: peer i's curvature is (i+1)^2 / N, up to N, so the
// learning rates below scale with 1/N to keep local steps stable at 64 peers.
ObjectiveOptions quadratic(double sigma) {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::quadratic;
  o.preset = QuadraticPreset::epfl;
  o.dim = 4;
  o.heterogeneity = 1.0;
  o.gradient_noise = sigma;
  return o;
}

ObjectiveOptions synthetic_logistic() {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::logistic;
  o.dim = 5;
  o.samples_per_peer = 16;
  o.separation = 1.0;
  o.label_skew = 0.6;
  return o;
}

double quadratic_lr(int n) { return 0.6 / n; }

// ---- comparison -------------------------------------------------------------------

// Relative 1e-12, or absolute 1e-12 for values below 1 in magnitude (a gap or a
// consensus distance near 0 is only known to rounding of the larger terms).
bool close(double got, double want, double scale = 1.0) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(got - want) <= 1e-12 * std::max({1.0, std::fabs(want), scale});
}

// Counts mismatches between a recorded trial and the sequential engine's, reporting each.
int compare_trials(const TrainingTrial& got, const TrainingTrial& want) {
  int bad = 0;
  auto fail = [&](const std::string& what) {
    ++bad;
    ADD_FAILURE() << "trial " << want.index << ": " << what;
  };
  if (got.index != want.index) fail("index " + std::to_string(got.index));
  if (got.seed != want.seed) fail("seed");
  if (!got.complete) fail("not complete");
  if (got.rows.size() != want.rows.size()) {
    fail("rows " + std::to_string(got.rows.size()) + " != " + std::to_string(want.rows.size()) +
         " (last steps " + std::to_string(got.rows.empty() ? -1 : got.rows.back().step) + ", " +
         std::to_string(want.rows.empty() ? -1 : want.rows.back().step) + ")");
    return bad;
  }
  for (std::size_t r = 0; r < want.rows.size(); ++r) {
    const TrainingRow &g = got.rows[r], &w = want.rows[r];
    const std::string at = " at step " + std::to_string(w.step);
    auto value = [&](const char* name, double a, double b, double scale = 1.0) {
      if (!close(a, b, scale)) {
        char text[160];
        std::snprintf(text, sizeof text, "%s %.17g != %.17g (difference %.3g)", name, a, b, a - b);
        fail(text + at);
      }
    };
    auto exact = [&](const char* name, long long a, long long b) {
      if (a != b) fail(std::string(name) + " " + std::to_string(a) + " != " + std::to_string(b) + at);
    };
    exact("step", g.step, w.step);
    exact("round", g.round, w.round);
    value("loss", g.loss, w.loss);
    value("gap", g.gap, w.gap);
    value("relative_gap", g.relative_gap, w.relative_gap);
    value("distance", g.distance, w.distance);
    // The trainer's consensus is sum ||x_i - x*||^2 / N - distance: exact to
    // rounding of the distance to x*, not of the consensus itself.
    value("consensus", g.consensus, w.consensus, w.distance);
    value("accuracy", g.accuracy, w.accuracy);
    exact("alive", g.alive, w.alive);
    exact("groups", g.groups, w.groups);
    exact("failed_groups", g.failed_groups, w.failed_groups);
    exact("bytes_sent", static_cast<long long>(g.bytes_sent), static_cast<long long>(w.bytes_sent));
    if (r > 0 && g.time < got.rows[r - 1].time) fail("time goes back" + at);
  }
  if (got.targets.size() != want.targets.size()) {
    fail("targets");
    return bad;
  }
  for (std::size_t t = 0; t < want.targets.size(); ++t) {
    if (got.targets[t].target != want.targets[t].target || got.targets[t].rounds != want.targets[t].rounds ||
        got.targets[t].reached != want.targets[t].reached)
      fail("target " + std::to_string(want.targets[t].target) + ": steps " + std::to_string(got.targets[t].rounds) +
           " != " + std::to_string(want.targets[t].rounds));
  }
  return bad;
}

using Models = std::vector<std::vector<double>>;  // [peer][coordinate]

int compare_models(const Models& got, const Models& want, const char* what) {
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    for (std::size_t k = 0; k < want[i].size(); ++k)
      if (!close(got[i][k], want[i][k]) && ++bad <= 10)
        ADD_FAILURE() << what << ": peer " << i << " coordinate " << k << ": " << got[i][k] << " != " << want[i][k];
  return bad;
}

// What every rank's stop_requested() saw: one poll per evaluation.
class CountingObserver : public TrainingObserver {
 public:
  bool stop_requested() override {
    ++polls;
    return false;
  }
  int polls = 0;
};

struct Trained {
  TrainingResult result;
  Models models;          // rank 0: every peer's final model, in rank order
  int polls = 0;          // this rank's evaluations
  std::string test_set_kind;
};

// build_problem and run_training on MPI_COMM_WORLD; the models gathered to rank 0.
Trained train(const TrainingOptions& raw) {
  const TrainingOptions options = resolve(raw, world_size());
  const Problem problem = build_problem(options, MPI_COMM_WORLD);
  CountingObserver observer;
  Trained run;
  run.result = run_training(options, problem, MPI_COMM_WORLD, observer);
  run.polls = observer.polls;
  run.test_set_kind = problem.test_set_kind;
  const int n = world_size(), d = problem.local->dim();
  std::vector<double> all(static_cast<std::size_t>(n) * static_cast<std::size_t>(d));
  if (static_cast<int>(run.result.model.size()) != d) ADD_FAILURE() << "model of length " << run.result.model.size();
  run.result.model.resize(static_cast<std::size_t>(d));
  MPI_Gather(run.result.model.data(), d, MPI_DOUBLE, all.data(), d, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (world_rank() == 0)
    for (int i = 0; i < n; ++i) run.models.emplace_back(all.begin() + i * d, all.begin() + (i + 1) * d);
  return run;
}

// Called on every rank after `train`; rank 0 compares every trial's rows and the
// last trial's models with the sequential engine's. EXPECTs only: no rank may
// leave early.
void expect_matches_sequential_engine(const TrainingOptions& raw, const Trained& run) {
  EXPECT_FALSE(run.result.stopped);
  if (world_rank() != 0) return;
  const int n = world_size();
  const TrainingOptions options = resolve(raw, n);
  const Problem problem = build_problem_sequential(options, n);
  EXPECT_EQ(static_cast<int>(run.result.trials.size()), options.trials);
  Models last;
  for (int k = 0; k < options.trials; ++k) {
    const PopulationTrial want = run_training_sequential_trial(options, problem, n, k);
    if (k < static_cast<int>(run.result.trials.size())) compare_trials(run.result.trials[k], want.record);
    last.clear();
    // The models (under --gradient-tracking the population holds each peer's tracker after it).
    const auto d = static_cast<std::size_t>(problem.pooled->dim());
    for (int i = 0; i < n; ++i) last.emplace_back(want.models.peer(i).begin(), want.models.peer(i).begin() + d);
  }
  compare_models(run.models, last, "final model");
}

// Centralized minibatch SGD with momentum on the pooled problem, from x = 0:
//   v <- momentum v + (1/N) sum_i g_i(x),  x <- x - lr(s) v
// with g_i peer i's stochastic_gradient(x, B, trial seed, s): what allreduce with
// H = 1 and no failures computes on every peer.
std::vector<double> centralized_sgd(const TrainingOptions& raw, int n, int trial) {
  const TrainingOptions options = resolve(raw, n);
  const Problem problem = build_problem_sequential(options, n);
  const int d = problem.pooled->dim();
  const std::uint64_t seed = trial_seed(options.seed, trial);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), velocity = Eigen::VectorXd::Zero(d), g(d), sum(d);
  for (int s = 0; s < options.steps; ++s) {
    sum.setZero();
    for (int i = 0; i < n; ++i) {
      problem.peers[static_cast<std::size_t>(i)]->stochastic_gradient(x, options.batch, seed,
                                                                      static_cast<std::uint64_t>(s), g);
      sum += g;
    }
    velocity = options.momentum * velocity + sum / static_cast<double>(n);
    x -= options.lr.at(s) * velocity;
  }
  return {x.data(), x.data() + d};
}

// ---- acceptance: allreduce every step is centralized minibatch SGD ----------------

void expect_allreduce_is_centralized_sgd(TrainingOptions o) {
  const int n = world_size();
  o.protocol.name = "allreduce";
  o.local_steps = 1;
  o.fail_rate = 0.0;
  o.trials = 2;
  o.eval_every = 8;
  o.seed = 515;
  const Trained run = train(o);
  expect_matches_sequential_engine(o, run);
  if (world_rank() != 0) return;
  const std::vector<double> central = centralized_sgd(o, n, o.trials - 1);
  const Models expected(static_cast<std::size_t>(n), central);
  EXPECT_EQ(compare_models(run.models, expected, "against centralized SGD"), 0);
  // Not vacuous: the model moved away from 0, and the trial's minibatches (or
  // gradient noise) decide where it went.
  const std::vector<double> other = centralized_sgd(o, n, o.trials - 2);
  double norm = 0.0, difference = 0.0;
  for (std::size_t k = 0; k < central.size(); ++k) {
    norm += central[k] * central[k];
    difference += (central[k] - other[k]) * (central[k] - other[k]);
  }
  EXPECT_GT(norm, 0.0);
  EXPECT_GT(difference, 1e-6 * norm) << "another trial's noise gives the same model";
}

TEST(SgdAcceptance, AllreduceEveryStepWithoutFailuresIsCentralizedMinibatchSgdQuadratic) {
  TrainingOptions o;
  o.objective = quadratic(0.5);  // gradient noise
  o.batch = 2;
  o.momentum = 0.9;
  o.steps = 40;
  o.lr.lr = 0.3 / world_size();
  expect_allreduce_is_centralized_sgd(o);
}

TEST(SgdAcceptance, AllreduceEveryStepWithoutFailuresIsCentralizedMinibatchSgdLogistic) {
  TrainingOptions o;
  o.objective = synthetic_logistic();  // label skew: every peer's data differs
  o.batch = 3;
  o.momentum = 0.5;
  o.steps = 40;
  o.lr.lr = 0.5;
  o.lr.schedule = LrSchedule::inverse;
  o.lr.decay_steps = 10;
  expect_allreduce_is_centralized_sgd(o);
}

// ---- every protocol, both forms -------------------------------------------------------

// The suite's problem of an objective, before a case's own flags.
TrainingOptions sgd_base(const std::string& protocol, bool logistic) {
  const int n = world_size();
  TrainingOptions o;
  o.protocol.name = protocol;
  o.protocol.random_groups.group_size = 3;  // random-groups: several groups at small N
  o.objective = logistic ? synthetic_logistic() : quadratic(0.3);
  o.steps = 30;
  o.lr.lr = logistic ? 0.5 : quadratic_lr(n);
  o.lr.decay_steps = 8;
  o.lr.decay_factor = 0.5;
  o.eval_every = 7;  // does not divide the steps: the last step gets a row of its own
  o.trials = 2;
  o.seed = 2027;
  o.targets = {0.5, 1e-2};
  return o;
}

// A line of the protocol's case table, [sgd_forms]: an objective, then sgd_bench's flags.
TrainingOptions sgd_case_options(const test::TableCase& c) {
  return test::training_case(c, world_size(), [&](bool logistic) { return sgd_base(c.protocol, logistic); });
}

class SgdForms : public ::testing::TestWithParam<test::TableCase> {};

TEST_P(SgdForms, EveryModelAndRowMatches) {
  if (GetParam().protocol == "sgp-paper" && world_size() < 3)
    GTEST_SKIP() << "sgp-paper has no graph on " << world_size() << " peers";
  const TrainingOptions options = sgd_case_options(GetParam());
  const Trained run = train(options);
  expect_matches_sequential_engine(options, run);
}

// Every protocol's cases: its table's [sgd_forms] (tests/protocols/<name>/cases.txt).
INSTANTIATE_TEST_SUITE_P(Tables, SgdForms,
                         ::testing::ValuesIn(test::table_cases("sgd_forms", test::has_sequential_form)),
                         test::table_case_name);

// ---- a LIBSVM file, read and dealt by rank 0 ---------------------------------------------

// m samples in dimension d from the test stream, some features left out (sparse),
// the last one always present so the file's dimension is d.
std::string libsvm_text(int m, int d, std::uint64_t which) {
  const Stream stream(which, StreamId::test);
  std::string text;
  char number[64];
  for (int s = 0; s < m; ++s) {
    const bool positive = stream.uniform(1, static_cast<std::uint64_t>(s), 0) < 0.4;
    text += positive ? "+1" : "-1";
    for (int k = 0; k < d; ++k) {
      if (k + 1 < d && stream.uniform(2, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(k)) < 0.25)
        continue;
      const double v =
          stream.normal(3, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(k)) + (positive ? 0.6 : -0.6);
      std::snprintf(number, sizeof number, " %d:%.17g", k + 1, v);
      text += number;
    }
    text += "\n";
  }
  return text;
}

// Rank 0 writes the file under a name every rank learns; removed at the end.
class SharedFile {
 public:
  SharedFile(const std::string& name, const std::string& content) {
    if (world_rank() == 0) {
      path_ = (std::filesystem::temp_directory_path() /
               ("avb_sgd_forms_" + std::to_string(::getpid()) + "_" + name))
                  .string();
      std::ofstream(path_) << content;
    }
    int size = static_cast<int>(path_.size());
    MPI_Bcast(&size, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path_.resize(static_cast<std::size_t>(size));
    MPI_Bcast(path_.data(), size, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  ~SharedFile() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) std::filesystem::remove(path_);
  }
  SharedFile(const SharedFile&) = delete;
  SharedFile& operator=(const SharedFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(SgdLibsvm, ShardsDealtByRankZeroMatchTheSequentialEngine) {
  const SharedFile train_file("train.svm", libsvm_text(160, 5, 31));
  const SharedFile test_file("test.svm", libsvm_text(40, 4, 32));  // lacks the last feature: --data-dim applies
  struct Variant {
    DataSplit split;
    bool test_data;
    const char* protocol;
    int local_steps;
    double rate;
  };
  for (const Variant& v : {Variant{DataSplit::random, false, "gossip", 2, 0.1},
                           Variant{DataSplit::sorted, true, "moshpit", 1, 0.2},
                           Variant{DataSplit::sorted, false, "pushsum", 3, 0.1}}) {
    TrainingOptions o;
    o.objective.kind = ObjectiveKind::logistic;
    o.objective.data_path = train_file.path();
    o.objective.split = v.split;
    if (v.test_data) o.test_data = test_file.path();
    o.protocol.name = v.protocol;
    o.local_steps = v.local_steps;
    o.fail_rate = v.rate;
    o.steps = 25;
    o.batch = 2;
    o.lr.lr = 1.0;
    o.lr.schedule = LrSchedule::inverse;
    o.lr.decay_steps = 5;
    o.momentum = 0.3;
    o.eval_every = 6;
    o.trials = 2;
    o.seed = 99;
    SCOPED_TRACE(std::string(to_string(v.split)) + (v.test_data ? " with --test-data " : " ") + v.protocol);
    const Trained run = train(o);
    // No ASSERT here: a rank that left the loop alone would hang the others.
    expect_matches_sequential_engine(o, run);  // which reads the file itself, whole
    if (world_rank() == 0) {
      EXPECT_EQ(run.test_set_kind, v.test_data ? "file" : "train");
      EXPECT_EQ(read_libsvm(o.objective.data_path).dim(), 5);
      for (const TrainingTrial& trial : run.result.trials)
        for (const TrainingRow& row : trial.rows) EXPECT_TRUE(row.accuracy >= 0.0 && row.accuracy <= 1.0);
    }
  }
}

// ---- a stop during the set-up ----------------------------------------------------------

// A stop seen by one rank while the shards are made (each rank generating its
// own, or rank 0 dealing a file's) ends build_problem with StopRequested on every
// rank: they agree at one collective, so none is left waiting in a collective
// the others never reach (the test would hang). Each rank polls its own flag;
// here one rank's is set before the set-up begins, so rank 0 deals no shard at
// all. A stop between two dealt shards takes the same path (every rank reports
// at the agreement after the shards); nothing here can force one there.
TEST(SgdSetUp, AStopSeenByOneRankEndsTheSetUpOnEveryRank) {
  const SharedFile train_file("stop.svm", libsvm_text(64, 5, 33));
  struct Variant {
    const char* what;
    bool file;
    int stopping;  // the rank whose flag is set
  };
  for (const Variant& v : {Variant{"synthetic data, rank 0 stops", false, 0},
                           Variant{"synthetic data, the last rank stops", false, world_size() - 1},
                           Variant{"a LIBSVM file dealt by rank 0, which stops", true, 0}}) {
    SCOPED_TRACE(v.what);
    TrainingOptions o;
    o.objective.kind = ObjectiveKind::logistic;
    o.objective.samples_per_peer = 16;
    o.objective.dim = 4;
    if (v.file) o.objective.data_path = train_file.path();
    o.protocol.name = "allreduce";
    o.steps = 4;
    const TrainingOptions options = resolve(o, world_size());
    const std::atomic<bool> stop{world_rank() == v.stopping};
    bool stopped = false;
    try {
      build_problem(options, MPI_COMM_WORLD, &stop);
    } catch (const StopRequested&) {
      stopped = true;
    }
    EXPECT_TRUE(stopped) << "rank " << world_rank();
    // Still in step: every rank reaches the next collective.
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// ---- Fashion-MNIST's IDX files, read and dealt by rank 0 --------------------------------

// --objective softmax and mlp on the first max(48, N) training images
// (scripts/install-deps.sh installs the data set), accuracy on the t10k images:
// each rank's shard comes from rank 0 as bytes (and each rank draws the MLP's
// theta_0 itself), and every row and model has the sequential engine's bits.
TEST(SgdImages, ShardsDealtByRankZeroMatchTheSequentialEngine) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  struct Variant {
    DataSplit split;
    const char* protocol;
    int local_steps;
    double rate;
    ObjectiveKind kind = ObjectiveKind::softmax;
  };
  for (const Variant& v : {Variant{DataSplit::random, "gossip", 2, 0.1}, Variant{DataSplit::sorted, "moshpit", 1, 0.2},
                           Variant{DataSplit::random, "allreduce", 1, 0.0},
                           Variant{DataSplit::sorted, "random-groups", 2, 0.1, ObjectiveKind::mlp}}) {
    TrainingOptions o;
    o.objective.kind = v.kind;
    o.objective.hidden = 6;  // mlp: small, for the sanitizers
    o.objective.data_path = dir + "train-images-idx3-ubyte.gz";
    o.objective.data_limit = std::max(48, world_size());  // small: L-BFGS's GEMMs (sanitizers)
    o.objective.split = v.split;
    // The t10k images on one variant only: 10,000 images an evaluation are most of
    // this test's time (minutes under AddressSanitizer).
    const bool test_file = std::string(v.protocol) == "allreduce";
    if (test_file) o.test_data = dir + "t10k-images-idx3-ubyte.gz";
    o.protocol.name = v.protocol;
    o.local_steps = v.local_steps;
    o.fail_rate = v.rate;
    o.steps = 20;
    o.batch = 3;
    o.lr.lr = 0.1;
    o.momentum = 0.3;
    o.eval_every = test_file ? o.steps : 7;
    o.trials = 2;
    o.seed = 41;
    SCOPED_TRACE(std::string(to_string(v.kind)) + " " + std::string(to_string(v.split)) + " " + v.protocol);
    const Trained run = train(o);
    expect_matches_sequential_engine(o, run);
    if (world_rank() != 0) continue;
    EXPECT_EQ(run.test_set_kind, test_file ? "file" : "train");
    EXPECT_EQ(run.models.front().size(), v.kind == ObjectiveKind::mlp ? 6u * 785 + 10 * 7 : 7850u);
    // Whether it learns is SequentialSgdImages' and sgd_cli's question: at one
    // rank, 20 steps of 3 images can end above their start.
    for (const TrainingTrial& trial : run.result.trials)
      for (const TrainingRow& row : trial.rows) EXPECT_TRUE(row.accuracy >= 0.0 && row.accuracy <= 1.0);
  }
}

// ---- stopping and the last evaluation -------------------------------------------------

TEST(SgdRun, StopAtTargetStopsEveryRankAtTheSameStep) {
  const int n = world_size();
  TrainingOptions o;
  // Groups of up to 32 under 20% failures: the target within 3 to 12 steps at
  // every N up to 64 (gossip on a ring, or a sparse Moshpit grid, need not get there).
  o.protocol.name = "random-groups";
  o.fail_rate = 0.2;
  o.objective = quadratic(0.0);
  o.lr.lr = quadratic_lr(n);
  o.steps = 200;
  o.eval_every = 3;
  o.trials = 2;
  o.seed = 7;
  o.targets = {0.3, 0.05};
  o.stop_at_target = true;
  const Trained run = train(o);
  // Every rank evaluated as often as rank 0 recorded rows: they stopped together.
  std::vector<int> polls(static_cast<std::size_t>(n));
  MPI_Gather(&run.polls, 1, MPI_INT, polls.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  expect_matches_sequential_engine(o, run);
  if (world_rank() != 0) return;
  ASSERT_EQ(run.result.trials.size(), 2u);
  const int rows = static_cast<int>(run.result.trials[0].rows.size() + run.result.trials[1].rows.size());
  for (int i = 0; i < n; ++i) EXPECT_EQ(polls[i], rows) << "rank " << i;
  for (const TrainingTrial& trial : run.result.trials) {
    const TrainingRow& last = trial.rows.back();
    EXPECT_LT(last.step, o.steps) << "trial " << trial.index << " never reached the target: the test tests nothing";
    EXPECT_LE(last.relative_gap, 0.05);
    ASSERT_GE(trial.rows.size(), 2u);
    EXPECT_GT(trial.rows[trial.rows.size() - 2].relative_gap, 0.05);
    EXPECT_TRUE(trial.targets.back().reached);
    EXPECT_EQ(trial.targets.back().rounds, last.step);
  }
}

TEST(SgdRun, EvalEveryNotDividingTheStepsRecordsTheLastStep) {
  TrainingOptions o;
  o.protocol.name = "moshpit";
  o.objective = quadratic(0.2);
  o.lr.lr = quadratic_lr(world_size());
  o.steps = 23;
  o.local_steps = 3;
  o.eval_every = 5;
  o.fail_rate = 0.1;
  o.trials = 1;
  const Trained run = train(o);
  expect_matches_sequential_engine(o, run);
  if (world_rank() == 0 && run.result.trials.size() == 1) {
    std::vector<int> steps, rounds;
    for (const TrainingRow& row : run.result.trials[0].rows) {
      steps.push_back(row.step);
      rounds.push_back(row.round);
    }
    EXPECT_EQ(steps, (std::vector<int>{0, 5, 10, 15, 20, 23}));
    EXPECT_EQ(rounds, (std::vector<int>{0, 1, 3, 5, 6, 7}));  // round r after step 3r
  }
  // No steps at all: the initial row only, and the models stay at 0.
  o.steps = 0;
  const Trained none = train(o);
  expect_matches_sequential_engine(o, none);
  if (world_rank() == 0 && none.result.trials.size() == 1) {
    EXPECT_EQ(none.result.trials[0].rows.size(), 1u);
    for (const auto& x : none.models)
      for (double v : x) EXPECT_EQ(v, 0.0);
  }
}

// A protocol the catalog gains is trained on both forms here, or this fails naming it.
TEST(SgdFormsCoverage, EveryProtocolWithASequentialFormHasCases) {
  EXPECT_EQ(test::protocols_without_cases("SgdForms", test::has_sequential_form), std::vector<std::string>{});
}

}  // namespace
}  // namespace avb
