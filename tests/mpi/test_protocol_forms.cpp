// Every protocol's two forms against each other under failures: the MPI form and
// the sequential engine's population form hold the same vector on every peer after
// every round, wait out the same failures and count the same undecodable messages,
// and run_averaging writes the sequential engine's trace (values within rounding:
// the MPI engines sum by tree). Also a theory check: the exact average after d
// rounds on a full Moshpit grid.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "core/comm.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "run/averaging.hpp"
#include "sgd/trainer.hpp"
#include "run/sequential.hpp"
#include "sim/churn.hpp"
#include "support/case_options.hpp"
#include "support/case_tables.hpp"
#include "support/catalog_coverage.hpp"
#include "world.hpp"

namespace avb {
namespace {

// True on every rank if `local` is true on any: lets all ranks stop a test together.
bool any_rank(bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out != 0;
}

using test::world_size;

// A line of the protocol's case table, [forms]: averaging_bench's flags, with this
// suite's words: "--grid cube" and "--grid line" (the cube and the line that hold
// N peers) and a leading "decode-failures>=K" (each trial counts at least K
// undecodable messages: the case exists to exercise them).
struct FormsCase {
  std::string flags;
  int min_decode_failures = 0;
};

FormsCase read_case(const test::TableCase& c, int n) {
  if (!c.problem.empty()) throw std::runtime_error(c.problem);
  FormsCase f;
  std::istringstream words(c.flags);
  std::string word, last;
  while (words >> word) {
    if (word.rfind("decode-failures>=", 0) == 0) {
      f.min_decode_failures = std::stoi(word.substr(17));
      continue;
    }
    if (last == "--grid" && (word == "cube" || word == "line")) {
      int side = 1;
      while (side * side * side < n) ++side;
      const std::vector<int> cube{side, side, side};
      word = word == "line" ? std::to_string(n) : grid_to_string(cube);
    }
    f.flags += (f.flags.empty() ? "" : " ") + word;
    last = word;
  }
  return f;
}

// The suite's run around a case's flags: 12 rounds, three trials from different
// seeds (at 64 peers and more one trial has failures enough, and SMPI then
// simulates a third of the messages), groups of 3 (random-groups: several at small N).
AveragingOptions forms_base(int n) {
  AveragingOptions o;
  o.protocol.random_groups.group_size = 3;
  o.rounds = 12;
  o.trials = n >= 64 ? 1 : 3;
  o.seed = 2024;
  return o;
}

// Each case is read once a process for each N it is asked at (16 and the world's):
// building the program's parser costs more than a small case's run (under
// AddressSanitizer above all), and both tests of a case ask for it. A case that cannot be
// run at N is remembered as its ConfigError's message.
AveragingOptions forms_case_options(const test::TableCase& c, int n = world_size()) {
  static std::map<std::pair<int, std::string>, std::variant<AveragingOptions, std::string>> read;
  const std::string flags = read_case(c, n).flags;
  auto [it, added] = read.try_emplace({n, c.protocol + " " + flags}, std::string());
  if (added) {
    try {
      it->second = test::averaging_case(c.protocol, flags, n, forms_base(n));
    } catch (const ConfigError& e) {
      it->second = std::string(e.what());
    }
  }
  if (const std::string* refused = std::get_if<std::string>(&it->second)) throw ConfigError(*refused);
  return std::get<AveragingOptions>(it->second);
}

// Some graphs do not exist for every N (a hypercube needs a power of two, a
// random 3-regular graph an even N): those cases are skipped at that N. At 16
// peers every case must be a run averaging_bench takes, or the test fails.
bool buildable(const test::TableCase& c) {
  forms_case_options(c, 16);
  try {
    forms_case_options(c);
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

class ProtocolForms : public ::testing::TestWithParam<test::TableCase> {};

void expect_close(double got, double want, const char* what, int round) {
  EXPECT_LE(std::fabs(got - want), 1e-12 * std::max(1.0, std::fabs(want))) << what << " at round " << round;
}

// The sequential engine has no communicators and models groups by the butterfly
// only: the values of every group all-reduce within rounding, and the bytes of the
// ring and of mpi (charged the ring's). allreduce's mpi is the ring for it.
ProtocolOptions sequential_form(ProtocolOptions o) {
  o.groups = GroupForm::view;
  if (takes(o.name, "--min-group-size")) o.collective = Collective::butterfly;
  else if (o.collective == Collective::mpi) o.collective = Collective::ring;
  return o;
}

// Trial `seed`'s initial vectors, every peer's (the keyed stream both forms start from).
Population initial_population(std::uint64_t seed, int n, int dim) {
  Population x(n, dim);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < dim; ++k) x.peer(i)[static_cast<std::size_t>(k)] = initial_value(seed, i, k);
  return x;
}

TEST_P(ProtocolForms, EveryPeerMatchesAfterEveryRound) {
  // The case, read before any rank moves on: under SMPI the ranks share
  // GoogleTest's current parameter, which the first rank done sets to the next case's.
  const test::TableCase param = GetParam();
  if (!buildable(param)) GTEST_SKIP() << "no such graph on " << world_size() << " peers";
  const AveragingOptions options = forms_case_options(param);
  const int min_decode_failures = read_case(param, world_size()).min_decode_failures;
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  const int n = comm.size(), me = comm.rank();
  int joins = 0;  // churn: joiners that loaded a donor's state, over all trials
  for (int trial = 0; trial < options.trials; ++trial) {
    const std::uint64_t seed = trial_seed(options.seed, trial);
    FailureModel failures = trial_failures(options, seed, n);
    auto protocol = make_protocol(options.protocol, comm);
    // The sequential form alongside: the whole population on every rank.
    Population population = initial_population(seed, n, options.dim);
    std::vector<double> x(population.peer(me).begin(), population.peer(me).end());
    protocol->begin_trial(x, seed);
    const auto sequential = make_sequential_protocol(sequential_form(options.protocol), n);
    sequential->begin_trial(population, seed);
    std::vector<std::uint8_t> alive, waiting;
    int decode_failures = 0;  // over the trial, all peers
    for (int t = 1; t <= options.rounds; ++t) {
      for (int p = 0; p < n; ++p) joins += failures.joined(t, p) && failures.donor(t, p) >= 0;
      GroupCounters counters;
      Round round{t, seed, failures, comm, counters};
      if (load_joiners(comm, failures, t, x)) protocol->on_join(x);
      load_population_joiners(failures.donors(t), population);
      protocol->step(x, round);
      failures.alive_mask(t, alive);
      waiting.assign(static_cast<std::size_t>(n), 0);
      const RoundEffect by_sequential =
          sequential->step(population, PopulationRound{t, seed, failures, alive, waiting});
      // The same peers wait out a failure (--detection-timeout's time) on both engines.
      EXPECT_EQ(int{waiting[static_cast<std::size_t>(me)]}, counters.waited_on_failure)
          << "peer " << me << " round " << t << " trial " << trial;
      // Every undecodable message counted once, by its receiver, as the population form counts it.
      int counted = 0;
      MPI_Allreduce(&counters.decode_failures, &counted, 1, MPI_INT, MPI_SUM, comm.raw());
      EXPECT_EQ(counted, by_sequential.decode_failures) << "round " << t << " trial " << trial;
      decode_failures += counted;
      int mismatches = 0;
      for (int k = 0; k < options.dim; ++k) {
        const double by_engine = population.peer(me)[static_cast<std::size_t>(k)];
        if (!(std::fabs(x[k] - by_engine) <= 1e-12 * std::max(1.0, std::fabs(by_engine)))) {
          ADD_FAILURE() << "peer " << me << " coordinate " << k << " round " << t << " trial " << trial << ": MPI "
                        << x[k] << ", sequential engine " << by_engine;
          ++mismatches;
        }
      }
      // Stop on every rank together: a rank that left alone would hang the others.
      ASSERT_FALSE(any_rank(mismatches > 0)) << "round " << t << " trial " << trial;
    }
    if (n >= 2) {
      EXPECT_GE(decode_failures, min_decode_failures) << "trial " << trial;
    }
  }
  // A churn case must see new peers join, or it tests nothing (with 2 peers a joiner
  // rarely finds a donor up in both rounds).
  if (options.failure == FailureKind::churn && n >= 3) {
    EXPECT_GT(joins, 0);
  }
}

class Collect : public AveragingObserver {
 public:
  std::vector<TrialRecord> trials;
  void on_trial(const TrialRecord& t) override { trials.push_back(t); }
};

TEST_P(ProtocolForms, TraceIsTheSequentialEnginesRows) {
  if (!buildable(GetParam())) GTEST_SKIP() << "no such graph on " << world_size() << " peers";
  const AveragingOptions options = forms_case_options(GetParam());
  int n = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  Collect observer;
  const AveragingResult result = run_averaging(options, MPI_COMM_WORLD, observer);
  EXPECT_FALSE(result.stopped);
  if (me != 0) return;
  ASSERT_EQ(static_cast<int>(result.trials.size()), options.trials);
  AveragingOptions population_options = options;
  population_options.protocol = sequential_form(options.protocol);
  for (int trial = 0; trial < options.trials; ++trial) {
    const TrialRecord want = run_sequential_trial(population_options, n, trial);
    const TrialRecord& got = result.trials[trial];
    ASSERT_EQ(got.rows.size(), want.rows.size());
    EXPECT_EQ(got.seed, want.seed);
    for (std::size_t r = 0; r < want.rows.size(); ++r) {
      const RoundRow &g = got.rows[r], &w = want.rows[r];
      EXPECT_EQ(g.round, w.round);
      expect_close(g.variance, w.variance, "variance", w.round);
      expect_close(g.error, w.error, "error", w.round);
      expect_close(g.mean_drift, w.mean_drift, "mean_drift", w.round);
      EXPECT_EQ(g.alive, w.alive) << "round " << w.round;
      EXPECT_EQ(g.groups, w.groups) << "round " << w.round;
      EXPECT_EQ(g.failed_groups, w.failed_groups) << "round " << w.round;
      EXPECT_EQ(g.decode_failures, w.decode_failures) << "round " << w.round;
      EXPECT_EQ(g.bytes_sent, w.bytes_sent) << "round " << w.round;
      if (r > 0) {
        EXPECT_GE(g.time, got.rows[r - 1].time);
      }
      // Every semantics but partial preserves the mean (beyond rounding), and so do
      // the graph protocols with doubly stochastic rows; renormalised rows, the
      // paper's SGP and push-sum's estimates x/w move it.
      const std::string name = options.protocol.name;
      const bool moves_mean = *options.protocol.on_failure == FailureSemantics::partial || name == "sgp-paper" ||
                              name == "pushsum" ||
                              (name == "gossip" && options.protocol.alive_weights == AliveWeights::renormalize &&
                               options.fail_rate > 0) ||
                              options.protocol.quantizer.kind != QuantizerKind::none ||  // lossy messages
                              options.failure == FailureKind::churn;  // a joiner copies a donor's values
      if (!moves_mean) {
        EXPECT_LE(g.mean_drift, 1e-28);
      }
    }
    for (std::size_t i = 0; i < want.targets.size(); ++i) {
      EXPECT_EQ(got.targets[i].rounds, want.targets[i].rounds);
      EXPECT_EQ(got.targets[i].reached, want.targets[i].reached);
    }
  }
}

// Every protocol's cases: its table's [forms] (tests/protocols/<name>/cases.txt).
INSTANTIATE_TEST_SUITE_P(Tables, ProtocolForms,
                         ::testing::ValuesIn(test::table_cases("forms", test::has_sequential_form)),
                         test::table_case_name);

// With N = M^d peers and no failures, Moshpit holds the exact average after d
// rounds, whatever the placement and key rule (the paper's Section 3.1).
TEST(MoshpitExact, FullGridAveragesExactlyInDRounds) {
  const int n = world_size();
  std::vector<std::vector<int>> grids;
  for (int m = 1; m <= n; ++m) {
    if (m * m == n && m > 1) grids.push_back({m, m});
    if (m * m * m == n && m > 1) grids.push_back({m, m, m});
  }
  if (n > 1) grids.push_back({n});
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  for (const auto& grid : grids)
    for (const char* placement : {"random", "rank"})
      for (const char* key_update : {"axis", "chunk"}) {
        AveragingOptions o;
        o.protocol.name = "moshpit";
        o.protocol.moshpit.grid = grid;
        o.protocol.moshpit.placement = parse_placement(placement);
        o.protocol.moshpit.key_update = parse_key_update(key_update);
        o.dim = 3;
        o = resolve(o, n);
        const std::uint64_t seed = trial_seed(77, 0);
        FailureModel failures(seed, 0.0, FailureKind::transient, n);
        auto protocol = make_protocol(o.protocol, comm);
        // The exact mean, summed here in peer order (neither form's code).
        std::vector<double> mean(static_cast<std::size_t>(o.dim), 0.0), x(mean.size());
        for (int k = 0; k < o.dim; ++k) {
          for (int i = 0; i < n; ++i) mean[static_cast<std::size_t>(k)] += initial_value(seed, i, k);
          mean[static_cast<std::size_t>(k)] /= n;
          x[static_cast<std::size_t>(k)] = initial_value(seed, comm.rank(), k);
        }
        protocol->begin_trial(x, seed);
        for (int t = 1; t <= static_cast<int>(grid.size()); ++t) {
          GroupCounters counters;
          Round round{t, seed, failures, comm, counters};
          protocol->step(x, round);
        }
        bool wrong = false;
        for (int k = 0; k < o.dim; ++k) wrong |= !(std::fabs(x[k] - mean[k]) <= 1e-12 * std::max(1.0, std::fabs(mean[k])));
        EXPECT_FALSE(wrong) << "grid " << grid_to_string(grid) << " " << placement << "/" << key_update << " peer "
                            << comm.rank();
        ASSERT_FALSE(any_rank(wrong));
      }
}

// A protocol the catalog gains has its two forms compared here, or this fails naming it.
TEST(ProtocolFormsCoverage, EveryProtocolWithASequentialFormHasCases) {
  EXPECT_EQ(test::protocols_without_cases("ProtocolForms", test::has_sequential_form), std::vector<std::string>{});
}

}  // namespace
}  // namespace avb

namespace avb {
namespace {

// A stop request seen by one rank only (as when a signal reaches one process)
// must stop every rank after the same round, at the next shared verdict.
class StopAfter : public AveragingObserver {
 public:
  StopAfter(bool asks, int calls) : asks_(asks), calls_(calls) {}
  bool stop_requested() override { return asks_ && ++seen_ > calls_; }
  void on_trial(const TrialRecord& t) override { trials.push_back(t); }
  std::vector<TrialRecord> trials;

 private:
  bool asks_;
  int calls_;
  int seen_ = 0;
};

TEST(AveragingRun, StopRequestOnOneRankStopsEveryRankTogether) {
  int n = 0, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  AveragingOptions o;
  o.rounds = 50;
  o.trials = 3;
  o.fail_rate = 0.1;
  // The last rank asks from round 3 on (its 4th poll: rounds 0, 1, 2, 3).
  StopAfter observer(me == n - 1, 3);
  const AveragingResult result = run_averaging(resolve(o, n), MPI_COMM_WORLD, observer);
  EXPECT_TRUE(result.stopped);
  if (me != 0) return;
  ASSERT_EQ(result.trials.size(), 1u);
  const TrialRecord& trial = result.trials.front();
  EXPECT_FALSE(trial.complete);
  // Verdicts are shared every round: everyone stops after round 3.
  EXPECT_EQ(trial.rows.back().round, 3);
}

}  // namespace
// The runs take options as resolve() returned them for their world (resolved
// once per run); anything else is a programming error, the same on every rank.
TEST(RunSkeleton, RefusesOptionsNotResolvedForItsWorld) {
  AveragingObserver quiet;
  const AveragingOptions raw;
  EXPECT_THROW(run_averaging(raw, MPI_COMM_WORLD, quiet), Error);
  EXPECT_THROW(run_averaging(resolve(raw, world_size() + 1), MPI_COMM_WORLD, quiet), Error);
  const AveragingResult ok = run_averaging(resolve(raw, world_size()), MPI_COMM_WORLD, quiet);
  EXPECT_FALSE(ok.stopped);
  TrainingOptions training;
  training.objective.dim = 2;
  EXPECT_THROW(build_problem(training, MPI_COMM_WORLD), Error);
}

}  // namespace avb

