// Every protocol's two forms against each other under failures: the MPI form and
// the sequential engine's population form hold the same vector on every peer after
// every round, wait out the same failures and count the same undecodable messages,
// and run_averaging writes the sequential engine's trace (values within rounding:
// the MPI engines sum by tree). Also a theory check: the exact average after d
// rounds on a full Moshpit grid.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <tuple>

#include "support/catalog_coverage.hpp"
#include "core/comm.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "run/averaging.hpp"
#include "sgd/trainer.hpp"
#include "run/sequential.hpp"
#include "sim/churn.hpp"
#include "world.hpp"

namespace avb {
namespace {

struct Case {
  const char* protocol;
  const char* semantics;
  const char* kind;
  double rate;
  int dim;
  const char* collective = "auto";  // allreduce
  const char* grid = "default";     // moshpit: default, cube (d = 3), line (d = 1) or sides
  const char* placement = "random";
  const char* key_update = "axis";
  int group_size = 3;               // random-groups: small, so that small N has several groups
  const char* topology = "default";  // graph protocols
  const char* weights = "uniform";
  const char* alive_weights = "renormalize";
  const char* quantizer = "none";  // gossip, pairwise, choco, random-groups, moshpit: what travels on the wire
  std::int64_t lattice_q = 65536;
  double lattice_eps = 1e-4;
  int min_decode_failures = 0;  // the case exists to exercise failures: at least this many per run
  double join_rate = 0.0;       // --failure churn: new peers take departed peers' slots
  double gamma = 1.0;           // choco: the consensus step
  const char* groups = "view";  // allreduce, moshpit, random-groups: how groups are made
};

// True on every rank if `local` is true on any: lets all ranks stop a test together.
bool any_rank(bool local) {
  int in = local ? 1 : 0, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return out != 0;
}

using test::world_size;

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.protocol << "/" << c.semantics << "/" << c.kind << "/p=" << c.rate << "/dim=" << c.dim << "/"
            << c.collective << "/" << c.grid << "/" << c.placement << "/" << c.key_update << "/g=" << c.group_size << "/"
            << c.topology << "/" << c.weights << "/" << c.alive_weights << "/" << c.quantizer << "/q=" << c.lattice_q
            << "/eps=" << c.lattice_eps << "/gamma=" << c.gamma << "/groups=" << c.groups;
}

std::vector<int> grid_for(const char* spec, int n) {
  const std::string s = spec;
  if (s == "default") return {};
  if (s == "line") return {n};
  if (s == "cube") {
    int c = 1;
    while (c * c * c < n) ++c;
    return {c, c, c};
  }
  return parse_grid(s);
}

class ProtocolForms : public ::testing::TestWithParam<Case> {};

AveragingOptions options_for(const Case& c) {
  AveragingOptions o;
  o.protocol.name = c.protocol;
  o.protocol.on_failure = parse_failure_semantics(c.semantics);
  o.failure = parse_failure_kind(c.kind);
  o.fail_rate = c.rate;
  o.join_rate = c.join_rate;
  o.dim = c.dim;
  o.protocol.collective = parse_collective(c.collective);
  o.protocol.groups = kGroupFormNames.parse(c.groups);
  o.protocol.grid = grid_for(c.grid, world_size());
  o.protocol.placement = parse_placement(c.placement);
  o.protocol.key_update = parse_key_update(c.key_update);
  o.protocol.group_size = c.group_size;
  if (std::string(c.topology) != "default") o.protocol.topology = parse_topology(c.topology);
  o.protocol.weights = parse_weights(c.weights);
  o.protocol.alive_weights = parse_alive_weights(c.alive_weights);
  o.protocol.quantizer = parse_quantizer(c.quantizer, c.lattice_q, c.lattice_eps);
  o.protocol.gamma = c.gamma;
  o.rounds = 12;
  // Three trials start from different seeds; at 64 peers and more one trial has
  // failures enough, and SMPI then simulates a third of the messages.
  o.trials = world_size() >= 64 ? 1 : 3;
  o.seed = 2024;
  return resolve(o, world_size());
}

// Some graphs do not exist for every N (a hypercube needs a power of two, a
// random 3-regular graph an even N): those cases are skipped at that N.
bool buildable(const Case& c) {
  try {
    options_for(c);
    return true;
  } catch (const ConfigError&) {
    return false;
  }
}

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
  if (!buildable(GetParam())) GTEST_SKIP() << "no such graph on " << world_size() << " peers";
  const AveragingOptions options = options_for(GetParam());
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
      EXPECT_GE(decode_failures, GetParam().min_decode_failures) << "trial " << trial;
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
  const AveragingOptions options = options_for(GetParam());
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

// Churn: peers leave at `rate` and new ones take their slots at `join`, loading a
// live peer's values; the population form copies the same values at the same rounds.
Case churn(const char* protocol, const char* semantics, double rate, double join, int dim,
           const char* topology = "default", const char* key_update = "axis") {
  Case c{protocol, semantics, "churn", rate, dim};
  c.topology = topology;
  c.key_update = key_update;
  c.join_rate = join;
  return c;
}

// A case's name in test filters: its place, protocol, graph or collective, and what
// travels on the wire (e.g. 4_gossip_complete), so that a filter picks cases by what
// they are, not by their place in a list.
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string name = std::to_string(info.index) + "_" + c.protocol + "_" +
                     (std::string(c.topology) != "default" ? c.topology : c.collective);
  if (std::string(c.quantizer) != "none") name += std::string("_") + c.quantizer;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Churn, ProtocolForms,
    ::testing::Values(churn("allreduce", "survivors", 0.2, 0.5, 3), churn("allreduce", "abort", 0.1, 1.0, 2),
                      churn("moshpit", "survivors", 0.25, 0.4, 3), churn("moshpit", "partial", 0.2, 0.3, 2),
                      churn("moshpit", "survivors", 0.2, 0.5, 2, "default", "chunk"),
                      churn("random-groups", "survivors", 0.2, 0.5, 4), churn("gossip", "survivors", 0.2, 0.5, 3, "ring"),
                      churn("pairwise", "survivors", 0.3, 0.6, 2, "complete"),
                      churn("sgp-paper", "survivors", 0.2, 0.5, 2)), case_name);

// --groups comm and the all-reduces group protocols may now use (--collective): the
// same values as the population form's (the library's MPI_Allreduce within 1e-12) and the same
// bytes (mpi is charged the ring's, and the ring moves the butterfly's).
Case grouped(const char* protocol, const char* semantics, double rate, int dim, const char* collective,
             const char* groups) {
  Case c{protocol, semantics, "transient", rate, dim, collective};
  c.groups = groups;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Groups, ProtocolForms,
    ::testing::Values(grouped("allreduce", "survivors", 0.2, 5, "mpi", "comm"),
                      grouped("allreduce", "abort", 0.05, 3, "mpi", "comm"),
                      grouped("allreduce", "survivors", 0.3, 4, "ring", "comm"),
                      grouped("random-groups", "survivors", 0.2, 5, "mpi", "comm"),
                      grouped("random-groups", "partial", 0.25, 7, "mpi", "comm"),
                      grouped("random-groups", "abort", 0.15, 3, "butterfly", "comm"),
                      grouped("moshpit", "survivors", 0.2, 3, "mpi", "comm"),
                      grouped("moshpit", "partial", 0.2, 6, "mpi", "comm"),
                      grouped("moshpit", "survivors", 0.1, 5, "ring", "comm"),
                      grouped("moshpit", "survivors", 0.1, 5, "ring", "view")), case_name);

INSTANTIATE_TEST_SUITE_P(
    Allreduce, ProtocolForms,
    ::testing::Values(Case{"allreduce", "abort", "transient", 0.0, 1}, Case{"allreduce", "abort", "transient", 0.05, 3},
                      Case{"allreduce", "survivors", "transient", 0.2, 5},
                      Case{"allreduce", "survivors", "permanent", 0.1, 2},
                      Case{"allreduce", "abort", "permanent", 0.02, 4},
                      Case{"allreduce", "survivors", "transient", 0.6, 17},
                      Case{"allreduce", "survivors", "transient", 0.1, 33, "ring"},
                      Case{"allreduce", "abort", "transient", 0.01, 33, "doubling"},
                      Case{"allreduce", "survivors", "transient", 0.3, 3, "tree"}), case_name);

INSTANTIATE_TEST_SUITE_P(
    RandomGroups, ProtocolForms,
    ::testing::Values(Case{"random-groups", "survivors", "transient", 0.0, 1},
                      Case{"random-groups", "survivors", "transient", 0.2, 5},
                      Case{"random-groups", "abort", "transient", 0.15, 3},
                      Case{"random-groups", "partial", "transient", 0.25, 7},
                      Case{"random-groups", "partial", "permanent", 0.1, 2},
                      Case{"random-groups", "survivors", "transient", 0.1, 1, "auto", "default", "random", "axis", 2},
                      Case{"random-groups", "survivors", "transient", 0.1, 4, "auto", "default", "random", "axis", 32}), case_name);

INSTANTIATE_TEST_SUITE_P(
    Moshpit, ProtocolForms,
    ::testing::Values(Case{"moshpit", "survivors", "transient", 0.0, 1},
                      Case{"moshpit", "survivors", "transient", 0.2, 3},
                      Case{"moshpit", "abort", "transient", 0.1, 2},
                      Case{"moshpit", "partial", "transient", 0.2, 6},
                      Case{"moshpit", "survivors", "permanent", 0.1, 1},
                      Case{"moshpit", "survivors", "transient", 0.1, 5, "auto", "cube", "random", "axis"},
                      Case{"moshpit", "partial", "transient", 0.15, 4, "auto", "cube", "rank", "chunk"},
                      Case{"moshpit", "survivors", "transient", 0.0, 3, "auto", "default", "rank", "chunk"},
                      Case{"moshpit", "survivors", "transient", 0.2, 2, "auto", "default", "random", "chunk"},
                      Case{"moshpit", "abort", "transient", 0.1, 3, "auto", "cube", "random", "chunk"},
                      Case{"moshpit", "survivors", "transient", 0.1, 2, "auto", "line", "random", "axis"}), case_name);

INSTANTIATE_TEST_SUITE_P(
    Graphs, ProtocolForms,
    ::testing::Values(
        Case{"gossip", "survivors", "transient", 0.0, 2, "auto", "default", "random", "axis", 3, "ring"},
        Case{"gossip", "survivors", "transient", 0.2, 3, "auto", "default", "random", "axis", 3, "torus"},
        Case{"gossip", "survivors", "transient", 0.2, 1, "auto", "default", "random", "axis", 3, "exp"},
        Case{"gossip", "survivors", "transient", 0.1, 2, "auto", "default", "random", "axis", 3, "one-peer-exp"},
        Case{"gossip", "survivors", "transient", 0.2, 2, "auto", "default", "random", "axis", 3, "complete",
             "metropolis", "metropolis"},
        Case{"gossip", "survivors", "permanent", 0.1, 2, "auto", "default", "random", "axis", 3, "hypercube",
             "metropolis", "renormalize"},
        Case{"gossip", "survivors", "transient", 0.2, 3, "auto", "default", "random", "axis", 3, "random-regular:3",
             "metropolis", "metropolis"},
        Case{"pushsum", "survivors", "transient", 0.0, 2},
        Case{"pushsum", "survivors", "transient", 0.2, 3},
        Case{"pushsum", "survivors", "transient", 0.1, 2, "auto", "default", "random", "axis", 3, "exp"},
        Case{"pushsum", "survivors", "transient", 0.1, 1, "auto", "default", "random", "axis", 3, "ring"},
        Case{"sgp-paper", "survivors", "transient", 0.0, 1}, Case{"sgp-paper", "survivors", "transient", 0.2, 4},
        Case{"pairwise", "survivors", "transient", 0.0, 2},
        Case{"pairwise", "survivors", "transient", 0.2, 3, "auto", "default", "random", "axis", 3, "ring"},
        Case{"pairwise", "survivors", "transient", 0.1, 2, "auto", "default", "random", "axis", 3, "torus"}), case_name);

// Quantized gossip and pairwise (docs/protocols.md): each peer sends Q(x), decoded
// near the receiver's own value, with the dither keyed by (seed, round, sender).
// The population form encodes and decodes the same way; the small lattices force
// decode failures, which both must count alike.
Case quantized(const char* protocol, const char* topology, double rate, int dim, const char* quantizer,
               std::int64_t q = 65536, double eps = 1e-4, int min_failures = 0, const char* weights = "uniform",
               const char* alive_weights = "renormalize") {
  Case c{protocol, "survivors", "transient", rate, dim};
  c.topology = topology;
  c.weights = weights;
  c.alive_weights = alive_weights;
  c.quantizer = quantizer;
  c.lattice_q = q;
  c.lattice_eps = eps;
  c.min_decode_failures = min_failures;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Quantized, ProtocolForms,
    ::testing::Values(quantized("gossip", "ring", 0.1, 3, "fp16"), quantized("gossip", "torus", 0.2, 5, "uniform8"),
                      quantized("gossip", "exp", 0.1, 4, "stochastic:4"),
                      quantized("gossip", "complete", 0.2, 3, "lattice", 65536, 1e-4, 0, "metropolis", "metropolis"),
                      quantized("gossip", "ring", 0.1, 2, "lattice", 4, 0.1, 1),
                      quantized("gossip", "hypercube", 0.0, 3, "stochastic:1"),
                      quantized("pairwise", "complete", 0.1, 2, "fp16"),
                      quantized("pairwise", "ring", 0.2, 3, "stochastic:4"),
                      quantized("pairwise", "torus", 0.0, 4, "uniform8"),
                      quantized("pairwise", "complete", 0.1, 2, "lattice", 8, 0.05, 1),
                      quantized("pairwise", "hypercube", 0.0, 3, "lattice"),
                      // The lattice fallback engages on most first messages (at
                      // least both of a pair's at N = 2): values, counts and bytes
                      // (verdicts, values sent again) as the population form.
                      quantized("gossip", "torus", 0.1, 3, "lattice", 2, 1e-3, 2),
                      quantized("gossip", "exp", 0.0, 2, "lattice", 4, 1e-3, 2, "metropolis", "metropolis"),
                      quantized("pairwise", "ring", 0.1, 4, "lattice", 4, 1e-3, 2),
                      quantized("pairwise", "complete", 0.0, 3, "lattice", 2, 1e-2, 2)), case_name);

// Quantized butterflies (docs/protocols.md, "Quantizers"): every part travels
// encoded both ways, with failures mid-all-reduce under partial. Values, bytes at
// the encoded size and counts as the population form.
// allreduce: every message of the ring, doubling or tree encoded.
Case coded_groups(const char* protocol, const char* semantics, double rate, int dim, const char* quantizer,
                  const char* grid = "default", const char* collective = "auto") {
  Case c{protocol, semantics, "transient", rate, dim};
  c.grid = grid;
  c.quantizer = quantizer;
  c.collective = collective;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    QuantizedGroups, ProtocolForms,
    ::testing::Values(coded_groups("random-groups", "survivors", 0.1, 5, "fp16"),
                      coded_groups("random-groups", "partial", 0.25, 7, "uniform8"),
                      coded_groups("random-groups", "abort", 0.15, 3, "stochastic:4"),
                      coded_groups("moshpit", "survivors", 0.2, 4, "uniform8"),
                      coded_groups("moshpit", "partial", 0.2, 6, "stochastic:3"),
                      coded_groups("moshpit", "survivors", 0.0, 9, "fp16", "cube"),
                      coded_groups("allreduce", "survivors", 0.2, 5, "uniform8", "default", "ring"),
                      coded_groups("allreduce", "abort", 0.05, 3, "fp16", "default", "ring"),
                      coded_groups("allreduce", "survivors", 0.2, 4, "stochastic:4", "default", "doubling"),
                      coded_groups("allreduce", "survivors", 0.1, 3, "fp16", "default", "tree"),
                      coded_groups("allreduce", "survivors", 0.0, 2, "uniform8")), case_name);

// CHOCO-Gossip (docs/protocols.md, "choco"): compressed differences on any graph
// and quantizer. Failures make receivers miss updates, which then travel whole;
// the time-varying graph makes them miss most; the small lattice fails to decode
// and sends differences again at full precision. Values, counts and bytes as the
// population form.
Case choco(const char* topology, const char* kind, double rate, int dim, const char* quantizer, double gamma,
           std::int64_t q = 65536, double eps = 1e-4, int min_failures = 0, const char* weights = "uniform") {
  Case c = quantized("choco", topology, rate, dim, quantizer, q, eps, min_failures, weights);
  c.kind = kind;
  c.gamma = gamma;
  return c;
}

INSTANTIATE_TEST_SUITE_P(
    Choco, ProtocolForms,
    ::testing::Values(choco("ring", "transient", 0.0, 3, "none", 1.0), choco("ring", "transient", 0.2, 2, "fp16", 0.8),
                      choco("torus", "transient", 0.1, 4, "uniform8", 0.5),
                      choco("complete", "transient", 0.2, 3, "stochastic:4", 0.3, 65536, 1e-4, 0, "metropolis"),
                      choco("one-peer-exp", "transient", 0.1, 2, "stochastic:2", 0.2),
                      choco("hypercube", "permanent", 0.1, 3, "lattice", 0.5),
                      choco("ring", "transient", 0.1, 2, "lattice", 0.5, 4, 0.1, 1),
                      choco("exp", "transient", 0.3, 2, "fp16", 0.6)), case_name);

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
        o.protocol.grid = grid;
        o.protocol.placement = parse_placement(placement);
        o.protocol.key_update = parse_key_update(key_update);
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
