// --topology base:K (sim/base_graph.cpp) against its promise, checked by applying
// its rows as gossip would: after the schedule's rounds every peer holds the exact
// mean for any N (powers of K + 1 or not, primes above K + 1 included), each round
// is symmetric and doubly stochastic with at most K neighbours a peer, and the
// schedule is O(log N) rounds long.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/topology.hpp"

namespace avb {
namespace {

struct Mixed {
  double variance, worst;  // of the values around their mean, after the rounds
  int rounds;
};

// Applies rounds 1..period of base:K to x_i = sin(1.3 i) + i / N.
Mixed mix_through(int n, int k) {
  const Topology g(parse_topology("base:" + std::to_string(k)), n, 1);
  std::vector<double> x(static_cast<std::size_t>(n)), next(x.size());
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = std::sin(1.3 * i) + static_cast<double>(i) / n;
  double mean = 0.0;
  for (double v : x) mean += v / n;
  MixingRow row;
  for (int t = 1; t <= g.period(); ++t) {
    for (int i = 0; i < n; ++i) {
      g.mixing_row(Weights::uniform, t, i, row);
      double sum = 0.0;
      for (std::size_t e = 0; e < row.peers.size(); ++e) sum += row.weights[e] * x[static_cast<std::size_t>(row.peers[e])];
      next[static_cast<std::size_t>(i)] = sum;
    }
    x.swap(next);
  }
  Mixed m{0.0, 0.0, g.period()};
  for (double v : x) {
    m.variance += (v - mean) * (v - mean) / n;
    m.worst = std::max(m.worst, std::abs(v - mean));
  }
  return m;
}

TEST(TopologyBase, ExactMeanForEveryPeerCount) {
  for (int k : {1, 2, 3, 4})
    for (int n : {1, 2, 3, 5, 6, 7, 12, 13, 100, 127, 1000}) {
      const Mixed m = mix_through(n, k);
      EXPECT_LT(m.variance, 1e-28) << "base:" << k << ", N = " << n;
      EXPECT_LT(m.worst, 1e-13) << "base:" << k << ", N = " << n;
      // Its digits in base K + 1: the groups' own rounds, then the merges and the spread.
      int digits = 1;
      for (long long place = k + 1; place <= n; place *= k + 1) ++digits;
      EXPECT_LE(m.rounds, 2 * digits + 1) << "base:" << k << ", N = " << n;
    }
}

TEST(TopologyBase, RoundsAreSymmetricDoublyStochasticWithAtMostKNeighbours) {
  for (int k : {1, 3})
    for (int n : {6, 100, 1000}) {
      const Topology g(parse_topology("base:" + std::to_string(k)), n, 1);
      EXPECT_FALSE(g.directed());
      EXPECT_TRUE(g.time_varying());
      for (int t = 1; t <= g.period(); ++t) {
        std::map<std::pair<int, int>, double> w;
        std::vector<double> column(static_cast<std::size_t>(n), 0.0);
        for (int i = 0; i < n; ++i) {
          const MixingRow row = g.mixing_row(Weights::uniform, t, i);
          EXPECT_LE(row.peers.size(), static_cast<std::size_t>(k) + 1) << "peer " << i << ", round " << t;
          EXPECT_EQ(g.in_neighbours(t, i).size() + 1, row.peers.size());
          double sum = 0.0;
          for (std::size_t e = 0; e < row.peers.size(); ++e) {
            EXPECT_GE(row.weights[e], 0.0);
            sum += row.weights[e];
            column[static_cast<std::size_t>(row.peers[e])] += row.weights[e];
            w[{i, row.peers[e]}] = row.weights[e];
          }
          EXPECT_NEAR(sum, 1.0, 1e-15);
        }
        for (double c : column) EXPECT_NEAR(c, 1.0, 1e-15) << "round " << t;
        for (const auto& [ij, v] : w) EXPECT_EQ(v, (w[{ij.second, ij.first}])) << "round " << t;
      }
    }
}

TEST(TopologyBase, NamesAndRefusals) {
  EXPECT_EQ(to_string(parse_topology("base:2")), "base:2");
  EXPECT_THROW(parse_topology("base:0"), ConfigError);
  const Topology g(parse_topology("base:1"), 6, 1);
  EXPECT_THROW(g.mixing_row(Weights::metropolis, 1, 0), ConfigError);
  EXPECT_EQ(g.period(), 5);  // 6 = 4 + 2: two rounds in the groups, a merge, two to spread over 4
}

}  // namespace
}  // namespace avb
