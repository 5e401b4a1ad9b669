// Graph protocols against spectral theory, run on the sequential engine (the MPI
// form writes the same rows: tests/mpi/test_protocol_forms.cpp).
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>

#include "run/averaging.hpp"
#include "sim/spectral.hpp"
#include "sim/topology.hpp"
#include "support/sequential_trial.hpp"

namespace avb {
namespace {

AveragingOptions gossip_options(const std::string& protocol, const std::string& topology, int rounds) {
  AveragingOptions o;
  o.protocol.name = protocol;
  o.protocol.topology = parse_topology(topology);
  o.rounds = rounds;
  o.trials = 1;
  o.seed = 99;
  return o;
}

// Synchronous gossip x <- Wx without failures: for i.i.d. initial values
// E[var_t] = E[var_0] * sum_{k>=2} |lambda_k|^(2t) / (N-1). The test compares the
// measured decay rate of the trial-averaged variance between rounds t0 and t1,
// log(V[t0]/V[t1]) / (t1 - t0), with the predicted one, within 5%.
struct RateCase {
  const char* topology;
  int n;
  int trials;
  int t0, t1;
};

class GossipSpectrum : public ::testing::TestWithParam<RateCase> {};

TEST_P(GossipSpectrum, DecayRateMatchesEigenvalues) {
  const RateCase c = GetParam();
  const AveragingOptions o = gossip_options("gossip", c.topology, c.t1);
  std::vector<double> measured(static_cast<std::size_t>(c.t1 + 1), 0.0), predicted(measured.size(), 0.0);
  const bool random_graph = std::string(c.topology).rfind("random", 0) == 0;
  std::vector<double> fixed;
  for (int trial = 0; trial < c.trials; ++trial) {
    const TrialRecord record = test::sequential_trial(o, c.n, trial);
    ASSERT_EQ(static_cast<int>(record.rows.size()), c.t1 + 1);
    for (int t = 0; t <= c.t1; ++t) measured[t] += record.rows[t].variance / c.trials;
    // Random graphs differ per trial (the trial's seed draws them): average the
    // predictions of the graphs actually used.
    if (random_graph || fixed.empty()) {
      const Topology g(*resolve(o, c.n).protocol.topology, c.n, trial_seed(o.seed, trial));
      fixed = predicted_variance_ratio(g, Weights::uniform, c.t1);
    }
    for (int t = 0; t <= c.t1; ++t) predicted[t] += fixed[t] / c.trials;
  }
  const double span = c.t1 - c.t0;
  const double rate = std::log(measured[c.t0] / measured[c.t1]) / span;
  const double theory = std::log(predicted[c.t0] / predicted[c.t1]) / span;
  std::printf("gossip %s N=%d: variance decay %.5f per round (rounds %d..%d), predicted %.5f (%+.1f%%)\n",
              c.topology, c.n, rate, c.t0, c.t1, theory, 100.0 * (rate / theory - 1.0));
  EXPECT_NEAR(rate / theory, 1.0, 0.05);
}

INSTANTIATE_TEST_SUITE_P(Graphs, GossipSpectrum,
                         ::testing::Values(RateCase{"ring", 64, 2000, 5, 60}, RateCase{"ring", 1024, 60, 5, 40},
                                           RateCase{"torus", 64, 100, 3, 30}, RateCase{"torus", 1024, 40, 5, 40},
                                           RateCase{"exp", 64, 100, 2, 12}, RateCase{"exp", 1024, 400, 2, 20},
                                           RateCase{"random-regular:8", 64, 100, 2, 12},
                                           RateCase{"random-regular:8", 256, 40, 2, 15}),
                         // Named by graph and size (e.g. torus_1024), for the test filters.
                         [](const ::testing::TestParamInfo<RateCase>& info) {
                           std::string name = std::string(info.param.topology) + "_" + std::to_string(info.param.n);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// One-peer exponential graph, N = 2^k, no failures: exact average in log2 N rounds,
// for gossip (weights 1/2) and push-sum (w stays 1).
TEST(OnePeerExp, ExactAverageInLog2NRounds) {
  for (const char* protocol : {"gossip", "pushsum"})
    for (int n : {2, 8, 64, 1024}) {
      int rounds = 0;
      while ((1 << rounds) < n) ++rounds;
      const TrialRecord record = test::sequential_trial(gossip_options(protocol, "one-peer-exp", rounds), n, 0);
      EXPECT_LT(record.rows.back().variance, 1e-28) << protocol << " N=" << n;
      if (rounds > 1) {
        EXPECT_GT(record.rows[rounds - 1].variance, 1e-6) << protocol << " N=" << n;
      }
    }
}

// Pairwise gossip: one pair averaging lowers Gamma = sum ||x_i - mean||^2 by
// ||x_i - x_j||^2 / 2; for a uniformly random edge of an r-regular graph
// E[Gamma'] <= (1 - lambda2(L)/(r n)) Gamma per interaction, with equality on the
// complete graph (x'Lx = N Gamma for every x). A round of m disjoint pairs, each
// edge equally likely: E[Gamma'] / Gamma <= 1 - m lambda2 / (r n).
TEST(Pairwise, ContractionAgainstLaplacian) {
  struct Graph {
    const char* topology;
    int n;
    bool exact;  // the bound holds with equality
  };
  for (const Graph& graph : {Graph{"complete", 1024, true}, Graph{"complete", 64, true}, Graph{"ring", 64, false},
                             Graph{"torus", 256, false}, Graph{"hypercube", 256, false}}) {
    const AveragingOptions o = gossip_options("pairwise", graph.topology, 6);
    const Topology g(*resolve(o, graph.n).protocol.topology, graph.n, 0);
    const double lambda2 = laplacian_lambda2(g);
    const double r = static_cast<double>(g.in_neighbours(1, 0).size());
    double measured = 0.0, bound = 0.0;
    int count = 0;
    for (int trial = 0; trial < 200; ++trial) {
      const TrialRecord record = test::sequential_trial(o, graph.n, trial);
      for (std::size_t t = 1; t < record.rows.size(); ++t) {
        measured += record.rows[t].variance / record.rows[t - 1].variance;
        bound += 1.0 - record.rows[t].groups * lambda2 / (r * graph.n);
        ++count;
      }
    }
    measured /= count;
    bound /= count;
    std::printf("pairwise %s N=%d: contraction %.5f per round, Laplacian bound %.5f\n", graph.topology, graph.n,
                measured, bound);
    if (graph.exact) {
      EXPECT_NEAR(measured / bound, 1.0, 0.05) << graph.topology << " N=" << graph.n;
    } else {
      EXPECT_LE(measured, bound) << graph.topology << " N=" << graph.n;
    }
    EXPECT_LT(measured, 0.999);  // something was averaged
  }
}

}  // namespace
}  // namespace avb
