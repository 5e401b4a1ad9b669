// Communication graphs and their spectra: names, degrees, symmetry, random regular
// graphs, edge-list files, mixing weights, and eigenvalues against closed forms.
#include <gtest/gtest.h>

#include "test_support.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numbers>
#include <set>
#include <sstream>
#include <streambuf>
#include <string>
#include <unistd.h>

#include "core/error.hpp"
#include "sim/spectral.hpp"
#include "sim/topology.hpp"

namespace avb {
namespace {

using std::numbers::pi;

Topology make(const std::string& text, int n, std::uint64_t seed = 1) {
  return Topology(parse_topology(text), n, seed);
}

using test::config_error;
using test::starts_with;

// Neighbour lists are ascending, free of i and duplicates, in range.
void expect_well_formed(const Topology& g, int t) {
  const int n = g.peers();
  for (int i = 0; i < n; ++i)
    for (const auto& list : {g.in_neighbours(t, i), g.out_neighbours(t, i)}) {
      for (std::size_t k = 0; k < list.size(); ++k) {
        ASSERT_GE(list[k], 0);
        ASSERT_LT(list[k], n);
        ASSERT_NE(list[k], i) << "self in the list of " << i;
        if (k > 0) {
          ASSERT_LT(list[k - 1], list[k]) << "not strictly ascending at peer " << i;
        }
      }
    }
}

// j in out(i) exactly when i in in(j).
void expect_in_out_consistent(const Topology& g, int t) {
  std::set<std::pair<int, int>> out, in;
  for (int i = 0; i < g.peers(); ++i) {
    for (int j : g.out_neighbours(t, i)) out.emplace(i, j);
    for (int j : g.in_neighbours(t, i)) in.emplace(j, i);
  }
  EXPECT_EQ(out, in);
}

bool connected(const Topology& g) {
  std::vector<char> seen(static_cast<std::size_t>(g.peers()), 0);
  std::vector<int> queue{0};
  seen[0] = 1;
  for (std::size_t h = 0; h < queue.size(); ++h)
    for (int j : g.out_neighbours(1, queue[h]))
      if (!seen[static_cast<std::size_t>(j)]) seen[static_cast<std::size_t>(j)] = 1, queue.push_back(j);
  return static_cast<int>(queue.size()) == g.peers();
}

// ---- names --------------------------------------------------------------------

TEST(TopologyNames, RoundTrip) {
  for (const char* text : {"ring", "torus", "hypercube", "exp", "one-peer-exp", "random-regular:1", "random-regular:8",
                           "epidemic:1", "epidemic:7", "complete", "file:/tmp/some graph.txt", "file:edges"}) {
    const TopologySpec spec = parse_topology(text);
    EXPECT_EQ(to_string(spec), text);
    const TopologySpec again = parse_topology(to_string(spec));
    EXPECT_EQ(again.kind, spec.kind);
    EXPECT_EQ(again.degree, spec.degree);
    EXPECT_EQ(again.path, spec.path);
  }
  EXPECT_EQ(parse_topology("random-regular:12").degree, 12);
  EXPECT_EQ(parse_topology("file:a:b").path, "a:b");
}

TEST(TopologyNames, Errors) {
  const std::string forms =
      "{ring, torus, hypercube, exp, one-peer-exp, random-regular:K, epidemic:S, base:K, complete, file:PATH}";
  EXPECT_EQ(config_error([] { parse_topology("star"); }), "--topology: 'star' is not one of " + forms);
  for (const char* bad : {"", "Ring", "ring ", "random-regular", "random-regular:", "random-regular:0",
                          "random-regular:-2", "random-regular:x", "random-regular:3x", "file:", "file", "epidemic",
                          "epidemic:0", "epidemic:-1", "epidemic:x", "base", "base:0", "base:k"}) {
    const std::string message = config_error([&] { parse_topology(bad); });
    EXPECT_TRUE(starts_with(message, "--topology: '" + std::string(bad) + "' is not one of " + forms)) << message;
  }
}

TEST(TopologyNames, Weights) {
  EXPECT_EQ(parse_weights("uniform"), Weights::uniform);
  EXPECT_EQ(parse_weights("metropolis"), Weights::metropolis);
  EXPECT_EQ(to_string(Weights::uniform), "uniform");
  EXPECT_EQ(to_string(Weights::metropolis), "metropolis");
  EXPECT_EQ(config_error([] { parse_weights("x"); }), "--weights: 'x' is not one of {uniform, metropolis}");
}

// ---- structure ------------------------------------------------------------------

TEST(TopologyStructure, OnePeerHasNoNeighbours) {
  for (const char* text : {"ring", "torus", "hypercube", "exp", "one-peer-exp", "complete"}) {
    const Topology g = make(text, 1);
    EXPECT_TRUE(g.in_neighbours(1, 0).empty()) << text;
    EXPECT_TRUE(g.out_neighbours(3, 0).empty()) << text;
    EXPECT_TRUE(g.edges(1).empty()) << text;
    EXPECT_EQ(g.period(), 1) << text;
    const MixingRow row = g.mixing_row(Weights::uniform, 1, 0);
    EXPECT_EQ(row.peers, std::vector<int>{0});
    EXPECT_EQ(row.weights, std::vector<double>{1.0});
  }
}

TEST(TopologyStructure, Ring) {
  EXPECT_EQ(make("ring", 2).in_neighbours(1, 0), std::vector<int>{1});
  EXPECT_EQ(make("ring", 3).in_neighbours(1, 0), (std::vector<int>{1, 2}));
  const Topology g = make("ring", 1024);
  EXPECT_FALSE(g.directed());
  EXPECT_FALSE(g.time_varying());
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(g.in_neighbours(1, i).size(), 2u);
  EXPECT_EQ(g.in_neighbours(1, 0), (std::vector<int>{1, 1023}));
  EXPECT_EQ(g.in_neighbours(7, 500), (std::vector<int>{499, 501}));
  expect_well_formed(g, 1);
  expect_in_out_consistent(g, 1);
  EXPECT_EQ(make("ring", 5).edges(1), (std::vector<std::pair<int, int>>{{0, 1}, {0, 4}, {1, 2}, {2, 3}, {3, 4}}));
}

TEST(TopologyStructure, Torus) {
  const Topology g = make("torus", 1024);  // 32 x 32
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(g.in_neighbours(1, i).size(), 4u);
  // Peer 33 = (1, 1): (0, 1), (2, 1), (1, 0), (1, 2).
  EXPECT_EQ(g.in_neighbours(1, 33), (std::vector<int>{1, 32, 34, 65}));
  EXPECT_EQ(g.in_neighbours(1, 0), (std::vector<int>{1, 31, 32, 992}));
  expect_well_formed(g, 1);
  expect_in_out_consistent(g, 1);
  EXPECT_EQ(g.edges(1).size(), 2048u);

  // 6 = 2 x 3: the two rows are one step apart both ways, so 1 + 2 neighbours.
  const Topology six = make("torus", 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(six.in_neighbours(1, i).size(), 3u);
  EXPECT_EQ(six.in_neighbours(1, 0), (std::vector<int>{1, 2, 3}));
  // 4 = 2 x 2: a 4-cycle. 7 is prime: 1 x 7, the ring.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(make("torus", 4).in_neighbours(1, i).size(), 2u);
  EXPECT_EQ(make("torus", 7).edges(1), make("ring", 7).edges(1));
  // 12 = 3 x 4.
  EXPECT_EQ(make("torus", 12).in_neighbours(1, 0), (std::vector<int>{1, 3, 4, 8}));
}

TEST(TopologyStructure, Hypercube) {
  const Topology g = make("hypercube", 1024);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(g.in_neighbours(1, i).size(), 10u);
  EXPECT_EQ(g.in_neighbours(1, 5), (std::vector<int>{1, 4, 7, 13, 21, 37, 69, 133, 261, 517}));
  expect_well_formed(g, 1);
  expect_in_out_consistent(g, 1);
  EXPECT_EQ(config_error([] { make("hypercube", 12); }),
            "--topology hypercube: needs the number of peers to be a power of two (got 12)");
}

TEST(TopologyStructure, Exponential) {
  for (int n : {2, 3, 5, 8, 1000, 1024}) {
    const Topology g = make("exp", n);
    EXPECT_TRUE(g.directed());
    EXPECT_EQ(g.period(), 1);
    const auto offsets = static_cast<std::size_t>(std::ceil(std::log2(n)));
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(g.out_neighbours(1, i).size(), offsets) << n;
      ASSERT_EQ(g.in_neighbours(1, i).size(), offsets) << n;
    }
    expect_well_formed(g, 1);
    expect_in_out_consistent(g, 1);
  }
  const Topology g = make("exp", 1024);
  EXPECT_EQ(g.out_neighbours(1, 1020), (std::vector<int>{0, 4, 12, 28, 60, 124, 252, 508, 1021, 1022}));
  EXPECT_EQ(g.in_neighbours(1, 0), (std::vector<int>{512, 768, 896, 960, 992, 1008, 1016, 1020, 1022, 1023}));
}

TEST(TopologyStructure, OnePeerExponential) {
  const Topology g = make("one-peer-exp", 1024);
  EXPECT_TRUE(g.directed());
  EXPECT_TRUE(g.time_varying());
  EXPECT_EQ(g.period(), 10);
  for (int t = 1; t <= 25; ++t) {
    const int hop = 1 << ((t - 1) % 10);
    for (int i : {0, 1, 700, 1023}) {
      EXPECT_EQ(g.out_neighbours(t, i), std::vector<int>{(i + hop) % 1024});
      EXPECT_EQ(g.in_neighbours(t, i), std::vector<int>{(i - hop + 1024) % 1024});
    }
    expect_in_out_consistent(g, t);
  }
  EXPECT_EQ(make("one-peer-exp", 2).period(), 1);
  EXPECT_EQ(make("one-peer-exp", 2).out_neighbours(5, 1), std::vector<int>{0});
  EXPECT_EQ(make("one-peer-exp", 6).period(), 3);
  EXPECT_EQ(make("one-peer-exp", 6).out_neighbours(3, 5), std::vector<int>{3});
  EXPECT_THROW(g.in_neighbours(0, 0), std::out_of_range);
  EXPECT_THROW(g.in_neighbours(1, 1024), std::out_of_range);
}

// Epidemic Learning's graph (EL-Local): each round every peer sends to S distinct
// others, drawn afresh, and hears from whoever drew it.
TEST(TopologyEpidemic, EachPeerSendsToSOthersDrawnAfreshEachRound) {
  const Topology g = make("epidemic:7", 96);
  EXPECT_TRUE(g.directed());
  EXPECT_TRUE(g.time_varying());
  std::size_t heard = 0, changed = 0;
  for (int t = 1; t <= 5; ++t) {
    expect_well_formed(g, t);
    expect_in_out_consistent(g, t);
    for (int i = 0; i < 96; ++i) {
      ASSERT_EQ(g.out_neighbours(t, i).size(), 7u);
      heard += g.in_neighbours(t, i).size();
      if (t > 1 && g.out_neighbours(t, i) != g.out_neighbours(t - 1, i)) ++changed;
    }
  }
  EXPECT_EQ(heard, 5u * 96 * 7);
  EXPECT_GT(changed, 4u * 96 - 4);  // the same 7 of 95 again: about one chance in 10^10
  // Asking about an earlier round again gives its graph again.
  const std::vector<int> in_3 = g.in_neighbours(3, 10);
  (void)g.in_neighbours(4, 10);
  EXPECT_EQ(g.in_neighbours(3, 10), in_3);
  // The trial's seed draws the graph: the same seed the same graph, another another.
  EXPECT_EQ(make("epidemic:7", 96, 5).out_neighbours(2, 3), make("epidemic:7", 96, 5).out_neighbours(2, 3));
  EXPECT_NE(make("epidemic:7", 96, 5).in_neighbours(2, 3), make("epidemic:7", 96, 6).in_neighbours(2, 3));
  // S = N - 1: everyone sends to everyone; one peer has nobody; S >= N is refused.
  const Topology all = make("epidemic:5", 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(all.in_neighbours(1, i).size(), 5u);
  EXPECT_TRUE(make("epidemic:3", 1).out_neighbours(1, 0).empty());
  EXPECT_EQ(config_error([] { make("epidemic:6", 6); }),
            "--topology epidemic:6: S must be below the number of peers (6): a peer sends to S others");
}

// Each other peer is one of the S a peer sends to with probability S / (N - 1).
TEST(TopologyEpidemic, TargetsAreUniform) {
  const Topology g = make("epidemic:2", 6);
  constexpr int kRounds = 30000;
  std::vector<int> count(6, 0);
  for (int t = 1; t <= kRounds; ++t)
    for (int j : g.out_neighbours(t, 0)) ++count[static_cast<std::size_t>(j)];
  EXPECT_EQ(count[0], 0);
  const double expected = kRounds * 2.0 / 5, sd = std::sqrt(expected * (1 - 2.0 / 5));
  for (int j = 1; j < 6; ++j) EXPECT_NEAR(count[static_cast<std::size_t>(j)], expected, 5 * sd) << "peer " << j;
}

// E[1 / (c + D)^2] for D ~ Binomial(m, p).
double inverse_square_mean(int m, double p, int c) {
  double sum = 0.0, term = std::pow(1 - p, m);  // P(D = 0)
  for (int d = 0; d <= m; ++d) {
    sum += term / ((c + d) * double(c + d));
    term *= (m - d) / double(d + 1) * p / (1 - p);  // P(D = d + 1) from P(D = d)
  }
  return sum;
}

// One round of uniform mixing on the epidemic graph (each peer averages its own
// value with those it received) takes a zero-mean x to W x with E||W x||^2 =
// beta ||x||^2, beta = a - b, a and b the diagonal and off-diagonal entries of
// E[W^T W] (equal along each by symmetry). With p = S / (N - 1) and in-degrees
// binomial (each sender picks a peer independently of the others):
//   a = E[1/(1 + Bin(N-1, p))^2] + (N - 1) p E[1/(2 + Bin(N-2, p))^2]
//   b = 2 p E[1/(2 + Bin(N-2, p))^2] + (N - 2) p^2 E[1/(3 + Bin(N-3, p))^2].
// The rounds' mean ratio, over 4000 drawn graphs, within 5 standard errors of it;
// at the paper's N = 96, S = 7 and at N = 1000, S = 2.
TEST(TopologyEpidemic, ContractionPerRoundMatchesTheory) {
  for (const auto& [n, s] : {std::pair{96, 7}, std::pair{1000, 2}}) {
    const double p = s / double(n - 1);
    const double a = inverse_square_mean(n - 1, p, 1) + (n - 1) * p * inverse_square_mean(n - 2, p, 2);
    const double b = 2 * p * inverse_square_mean(n - 2, p, 2) + (n - 2) * p * p * inverse_square_mean(n - 3, p, 3);
    const double beta = a - b;
    const Topology g = make("epidemic:" + std::to_string(s), n, 3);
    std::vector<double> x(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = std::sin(1.7 * i) + 0.3 * std::cos(0.45 * i * i);
    double mean = 0.0, norm = 0.0;
    for (double v : x) mean += v / n;
    for (double& v : x) {
      v -= mean;
      norm += v * v;
    }
    constexpr int kRounds = 4000;
    double sum = 0.0, sum2 = 0.0;
    MixingRow row;
    for (int t = 1; t <= kRounds; ++t) {
      double mixed_norm = 0.0;
      for (int i = 0; i < n; ++i) {
        g.mixing_row(Weights::uniform, t, i, row);
        double v = 0.0;
        for (std::size_t k = 0; k < row.peers.size(); ++k) v += row.weights[k] * x[static_cast<std::size_t>(row.peers[k])];
        mixed_norm += v * v;
      }
      sum += mixed_norm / norm;
      sum2 += (mixed_norm / norm) * (mixed_norm / norm);
    }
    const double got = sum / kRounds, se = std::sqrt((sum2 / kRounds - got * got) / kRounds);
    EXPECT_NEAR(got, beta, 5 * se) << "N " << n << ", S " << s << ": theory " << beta;
    // Above 1/(S + 1), what equal in-degrees S would give: the drawn in-degrees
    // vary, and a peer nobody drew keeps its value.
    EXPECT_GT(beta, 1.0 / (s + 1));
    EXPECT_LT(beta, 1.0);
  }
}

TEST(TopologyStructure, Complete) {
  const Topology g = make("complete", 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(g.in_neighbours(1, i).size(), 63u);
  expect_well_formed(g, 1);
  EXPECT_EQ(g.edges(1).size(), 64u * 63u / 2u);
}

TEST(TopologyStructure, AtLeastOnePeer) {
  EXPECT_TRUE(starts_with(config_error([] { make("ring", 0); }), "--topology ring: needs at least one peer"));
}

// ---- random regular graphs --------------------------------------------------------

void expect_regular_simple_connected(const Topology& g, int k) {
  for (int i = 0; i < g.peers(); ++i) ASSERT_EQ(g.in_neighbours(1, i).size(), static_cast<std::size_t>(k)) << i;
  expect_well_formed(g, 1);  // no self-loops, no multi-edges
  expect_in_out_consistent(g, 1);
  EXPECT_TRUE(connected(g));
}

TEST(TopologyRandomRegular, RegularSimpleConnected) {
  for (auto [n, k] : std::vector<std::pair<int, int>>{
           {2, 1}, {3, 2}, {4, 2}, {4, 3}, {5, 2}, {5, 4}, {6, 3}, {8, 3}, {10, 7}, {16, 2}, {100, 3}, {200, 150},
           {300, 100}, {1000, 2}, {1024, 8}, {4096, 8}}) {
    SCOPED_TRACE("n = " + std::to_string(n) + ", K = " + std::to_string(k));
    const Topology g = make("random-regular:" + std::to_string(k), n, 7);
    expect_regular_simple_connected(g, k);
    EXPECT_FALSE(g.directed());
  }
}

TEST(TopologyRandomRegular, DeterministicPerSeed) {
  const auto a = make("random-regular:8", 1024, 1).edges(1);
  EXPECT_EQ(a, make("random-regular:8", 1024, 1).edges(1));
  const auto b = make("random-regular:8", 1024, 2).edges(1);
  EXPECT_NE(a, b);
  std::vector<std::pair<int, int>> shared;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(shared));
  EXPECT_LT(shared.size(), 50u) << "two seeds should give nearly disjoint edge sets (expected ~8)";
  EXPECT_NE(make("random-regular:2", 100, 1).edges(1), make("random-regular:2", 100, 2).edges(1));
}

TEST(TopologyRandomRegular, FastAt4096) {
  const auto start = std::chrono::steady_clock::now();
  const Topology g = make("random-regular:8", 4096, 3);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("random-regular:8 on 4096 peers: %.2f ms\n", ms);
  EXPECT_LT(ms, 500.0);  // typically a few ms; loose for loaded or sanitized builds
  EXPECT_EQ(g.edges(1).size(), 4096u * 4u);
}

TEST(TopologyRandomRegular, Errors) {
  EXPECT_EQ(config_error([] { make("random-regular:4", 4); }),
            "--topology random-regular:4: needs K below the number of peers (got K = 4, 4 peers)");
  EXPECT_EQ(config_error([] { make("random-regular:3", 5); }),
            "--topology random-regular:3: needs the number of peers times K to be even (got 5 peers, K = 3)");
  EXPECT_TRUE(starts_with(config_error([] { make("random-regular:1", 4); }), "--topology random-regular:1: "));
  EXPECT_TRUE(starts_with(config_error([] { make("random-regular:1", 1); }), "--topology random-regular:1: "));
}

// Six peers, K = 3: 70 labelled graphs, 10 of them K_{3,3} (bipartite) and 60
// prisms. A uniform sampler gives K_{3,3} one time in 7; the pairing process is only
// asymptotically uniform, so this checks it is not far off.
TEST(TopologyRandomRegular, RoughlyUniformOnSixPeers) {
  const int draws = 2800;
  int bipartite = 0;
  for (int s = 0; s < draws; ++s) {
    const Topology g = make("random-regular:3", 6, static_cast<std::uint64_t>(s));
    // K_{3,3} has no triangle; a prism has two.
    bool triangle = false;
    for (const auto& [i, j] : g.edges(1)) {
      const auto& of_j = g.in_neighbours(1, j);
      for (int k : g.in_neighbours(1, i))
        if (k != j && std::binary_search(of_j.begin(), of_j.end(), k)) triangle = true;
    }
    bipartite += triangle ? 0 : 1;
  }
  std::printf("random-regular:3 on 6 peers: K_{3,3} in %d of %d draws (uniform: %d)\n", bipartite, draws, draws / 7);
  EXPECT_NEAR(bipartite, draws / 7.0, 0.35 * draws / 7.0);
}

// ---- edge-list files --------------------------------------------------------------

class TopologyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("avb_topology_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt"))
                .string();
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void write(const std::string& text) { std::ofstream(path_) << text; }
  std::string error(int n) {
    return config_error([&] { make("file:" + path_, n); });
  }
  std::string prefix() const { return "--topology file:" + path_ + ": "; }
  // TEXT, as the file of 4 peers, is rejected at LINE, whose words ENTRY are not an edge.
  void expect_not_an_edge(const std::string& text, int line, const std::string& entry) {
    write(text);
    EXPECT_EQ(error(4), prefix() + "line " + std::to_string(line) + ": '" + entry +
                            "' is not two peer numbers in [0, 4)")
        << text;
  }
  std::string path_;
};

TEST_F(TopologyFile, Good) {
  write("# a 4-cycle with a chord\n0 1\n\n  1 2\n2\t3\r\n3 0\n   # indented comment\n0 2\n2 0\n1 0\n");
  const Topology g = make("file:" + path_, 4);
  EXPECT_FALSE(g.directed());
  EXPECT_EQ(g.edges(1), (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {2, 3}}));
  EXPECT_EQ(g.in_neighbours(1, 0), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(g.out_neighbours(1, 1), (std::vector<int>{0, 2}));
}

TEST_F(TopologyFile, Malformed) {
  expect_not_an_edge("0 1\n# fine\n1 x\n", 3, "1 x");
  expect_not_an_edge("0 1 2\n", 1, "0 1 2");
  expect_not_an_edge("0\n", 1, "0");
  expect_not_an_edge("0 1.5\n", 1, "0 1.5");
}

TEST_F(TopologyFile, OutOfRange) {
  expect_not_an_edge("0 1\n1 2\n2 4\n", 3, "2 4");
  expect_not_an_edge("-1 2\n", 1, "-1 2");
  write("0 99999999999999999999\n");
  EXPECT_TRUE(starts_with(error(4), prefix() + "line 1: "));
}

TEST_F(TopologyFile, SelfLoop) {
  write("0 1\n2 2\n");
  EXPECT_EQ(error(3), prefix() + "line 2: '2 2' is a self-loop");
}

TEST_F(TopologyFile, Disconnected) {
  write("0 1\n2 3\n");
  EXPECT_EQ(error(4), prefix() + "the graph is not connected: peer 2 cannot be reached from peer 0");
  write("");
  EXPECT_EQ(error(2), prefix() + "the graph is not connected: peer 1 cannot be reached from peer 0");
  EXPECT_EQ(error(1), "");  // one peer, no edges: fine
}

// Found while fuzzing (tests/fuzz): a file without newlines was read into one
// string until memory ran out; now a line is at most 64 KiB.
TEST_F(TopologyFile, NoNewlineIsAnErrorNotAnEndlessLine) {
  write(std::string(70000, '\0'));
  EXPECT_EQ(error(4), prefix() + "line 1: longer than 65536 characters (is this a text edge list?)");
  write("0 1\n# " + std::string(70000, 'x') + "\n");
  EXPECT_EQ(error(2), prefix() + "line 2: longer than 65536 characters (is this a text edge list?)");
}

// The stream overload, which the fuzzer calls: the same graph and the same messages.
TEST(TopologyStream, SameAsTheFile) {
  const TopologySpec spec = parse_topology("file:edges.txt");
  std::istringstream good("0 1\r\n1 2\n# comment\n2 0");
  const Topology g(spec, 3, good);
  EXPECT_EQ(g.edges(1), (std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}}));
  std::istringstream bad("0 1\n1 3\n");
  EXPECT_EQ(config_error([&] { Topology(spec, 3, bad); }),
            "--topology file:edges.txt: line 2: '1 3' is not two peer numbers in [0, 3)");
}

// Found by fuzz_config: "topology = file:.\0\0txt" opened ".", a folder, whose
// first read threw std::ios_base::failure instead of a ConfigError.
TEST_F(TopologyFile, FolderAndNulInPath) {
  const std::string folder = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(config_error([&] { make("file:" + folder, 4); }),
            "--topology file:" + folder + ": cannot read the file (it is a directory)");
  EXPECT_EQ(config_error([&] { make(std::string("file:.\0txt", 10), 4); }),
            "--topology file:'.\\x00txt': the path contains a NUL byte");
}

// A stream whose reads throw, as std::filebuf does on a folder.
struct ThrowingBuffer : std::streambuf {
  int_type underflow() override { throw std::ios_base::failure("read error"); }
};

TEST(TopologyStream, ReadErrorIsAConfigError) {
  ThrowingBuffer buffer;
  std::istream in(&buffer);
  EXPECT_EQ(config_error([&] { Topology(parse_topology("file:edges.txt"), 2, in); }),
            "--topology file:edges.txt: cannot read the file");
}

TEST_F(TopologyFile, Unreadable) {
  const std::string missing = path_ + ".missing";
  const std::string message = config_error([&] { make("file:" + missing, 4); });
  EXPECT_TRUE(starts_with(message, "--topology file:" + missing + ": cannot read the file")) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

// ---- mixing weights -----------------------------------------------------------------

void expect_doubly_stochastic(const Topology& g, Weights w, int t) {
  const Eigen::MatrixXd W = mixing_matrix(g, w, t);
  EXPECT_LT((W.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-12);
  EXPECT_LT((W.colwise().sum().array() - 1.0).abs().maxCoeff(), 1e-12);
  EXPECT_GE(W.minCoeff(), 0.0);
}

TEST(TopologyMixing, UniformRows) {
  const Topology g = make("exp", 1024);
  const MixingRow row = g.mixing_row(Weights::uniform, 1, 0);
  EXPECT_EQ(row.peers, (std::vector<int>{0, 512, 768, 896, 960, 992, 1008, 1016, 1020, 1022, 1023}));
  for (double w : row.weights) EXPECT_DOUBLE_EQ(w, 1.0 / 11.0);
  const MixingRow mid = make("ring", 8).mixing_row(Weights::uniform, 1, 3);
  EXPECT_EQ(mid.peers, (std::vector<int>{2, 3, 4}));
}

TEST(TopologyMixing, DoublyStochastic) {
  for (const char* text : {"ring", "torus", "exp", "hypercube", "complete"})
    for (int n : {1, 2, 4, 16, 64}) {
      SCOPED_TRACE(std::string(text) + " " + std::to_string(n));
      expect_doubly_stochastic(make(text, n), Weights::uniform, 1);
    }
  for (int n : {3, 5, 12, 100}) expect_doubly_stochastic(make("exp", n), Weights::uniform, 1);
  for (int t = 1; t <= 6; ++t) expect_doubly_stochastic(make("one-peer-exp", 48), Weights::uniform, t);
  expect_doubly_stochastic(make("random-regular:5", 64, 3), Weights::metropolis, 1);
  expect_doubly_stochastic(make("torus", 15), Weights::metropolis, 1);
}

TEST_F(TopologyFile, MetropolisOnIrregularGraph) {
  // A star with a tail: degrees 3, 1, 1, 2, 1.
  write("0 1\n0 2\n0 3\n3 4\n");
  const Topology g = make("file:" + path_, 5);
  expect_doubly_stochastic(g, Weights::metropolis, 1);
  const MixingRow row = g.mixing_row(Weights::metropolis, 1, 3);
  EXPECT_EQ(row.peers, (std::vector<int>{0, 3, 4}));
  EXPECT_DOUBLE_EQ(row.weights[0], 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(row.weights[2], 1.0 / 3.0);
  EXPECT_NEAR(row.weights[1], 1.0 - 1.0 / 4.0 - 1.0 / 3.0, 1e-15);
  // Uniform weights on it are row- but not column-stochastic, and not normal.
  EXPECT_GT(std::abs(mixing_matrix(g, Weights::uniform, 1).colwise().sum()(0) - 1.0), 0.1);
  EXPECT_TRUE(starts_with(config_error([&] { predicted_variance_ratio(g, Weights::uniform, 3); }),
                          "predicted_variance_ratio: "));
}

TEST(TopologyMixing, MetropolisNeedsUndirected) {
  const std::string expected =
      "--weights metropolis: needs an undirected --topology (ring, torus, hypercube, random-regular:K, complete, "
      "file:PATH)";
  EXPECT_EQ(config_error([] { make("exp", 8).mixing_row(Weights::metropolis, 1, 0); }), expected);
  EXPECT_EQ(config_error([] { make("one-peer-exp", 8).mixing_row(Weights::metropolis, 2, 0); }), expected);
  // On a regular graph Metropolis is uniform.
  const Topology ring = make("ring", 9);
  EXPECT_EQ(ring.mixing_row(Weights::metropolis, 1, 4).weights.size(), 3u);
  for (double w : ring.mixing_row(Weights::metropolis, 1, 4).weights) EXPECT_NEAR(w, 1.0 / 3.0, 1e-15);
}

// One period of the one-peer exponential graph averages exactly when N = 2^k:
// after phase k each value is the mean of an aligned block of 2^(k+1) peers.
TEST(TopologyMixing, OnePeerExponentialPeriodIsExactAverage) {
  for (int n : {2, 4, 8, 64, 1024}) {
    const Topology g = make("one-peer-exp", n);
    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    RowMajor product = RowMajor::Identity(n, n);
    for (int t = 1; t <= g.period(); ++t) {  // product <- W(t) product, rows by the sparse mixing rows
      RowMajor next = RowMajor::Zero(n, n);
      for (int i = 0; i < n; ++i) {
        const MixingRow row = g.mixing_row(Weights::uniform, t, i);
        for (std::size_t k = 0; k < row.peers.size(); ++k) next.row(i) += row.weights[k] * product.row(row.peers[k]);
      }
      product.swap(next);
    }
    EXPECT_LT((product.array() - 1.0 / n).abs().maxCoeff(), 1e-12) << n;
  }
  // Not for other N: 6 peers, 3 rounds.
  const Topology g = make("one-peer-exp", 6);
  Eigen::MatrixXd product = Eigen::MatrixXd::Identity(6, 6);
  for (int t = 1; t <= 3; ++t) product = mixing_matrix(g, Weights::uniform, t) * product;
  EXPECT_GT((product.array() - 1.0 / 6).abs().maxCoeff(), 1e-3);
}

// ---- spectra ----------------------------------------------------------------------------

TEST(Spectral, RingUniform) {
  for (int n : {3, 10, 1024}) {
    const double rho = second_largest_modulus(mixing_matrix(make("ring", n), Weights::uniform, 1));
    EXPECT_NEAR(rho, 1.0 / 3.0 + 2.0 / 3.0 * std::cos(2 * pi / n), 1e-12) << n;
  }
}

TEST(Spectral, TorusUniform) {
  // Eigenvalues (1 + 2 cos(2 pi p / a) + 2 cos(2 pi q / b)) / 5; the largest
  // non-trivial modulus is at (p, q) = (1, 0): (3 + 2 cos(2 pi / 32)) / 5 = 0.99231.
  const double rho = second_largest_modulus(mixing_matrix(make("torus", 1024), Weights::uniform, 1));
  EXPECT_NEAR(rho, (3.0 + 2.0 * std::cos(2 * pi / 32)) / 5.0, 1e-12);
  // 3 x 5: (1 + 2 cos(2 pi / 5) + 2) / 5 beats (1 + 2 cos(2 pi / 3) + 2) / 5.
  const double rho15 = second_largest_modulus(mixing_matrix(make("torus", 15), Weights::uniform, 1));
  EXPECT_NEAR(rho15, (3.0 + 2.0 * std::cos(2 * pi / 5)) / 5.0, 1e-12);
}

TEST(Spectral, ExponentialUniform) {
  // lambda_m = (1 + sum_j e^(2 pi i m 2^j / N)) / 11 for N = 1024. m = 512 gives
  // exactly 9/11 (one term is -1, nine are 1); check the code's answer is the
  // largest over all m, computed independently here.
  const int n = 1024;
  double best = 0.0;
  for (int m = 1; m < n; ++m) {
    std::complex<double> sum = 1.0;
    for (int j = 0; j < 10; ++j) sum += std::polar(1.0, 2 * pi * static_cast<double>((m << j) % n) / n);
    best = std::max(best, std::abs(sum) / 11.0);
  }
  const double rho = second_largest_modulus(mixing_matrix(make("exp", n), Weights::uniform, 1));
  std::printf("exp 1024 uniform: rho = %.6f (9/11 = %.6f)\n", rho, 9.0 / 11.0);
  EXPECT_NEAR(rho, best, 1e-12);
  EXPECT_GE(rho, 9.0 / 11.0 - 1e-12);
}

TEST(Spectral, CirculantShortcutAgreesWithGeneralSolver) {
  // Relabelling peers (evens first, then odds) keeps the spectrum but breaks
  // circulance, so the general eigensolver runs on the same operator.
  const int n = 64;
  const Eigen::MatrixXd W = mixing_matrix(make("exp", n), Weights::uniform, 1);
  Eigen::MatrixXd P = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i) P(i % 2 == 0 ? i / 2 : n / 2 + i / 2, i) = 1.0;
  const Eigen::MatrixXd relabelled = P * W * P.transpose();
  bool circulant = true;
  for (int i = 1; i < n; ++i)
    for (int j = 0; j < n; ++j) circulant = circulant && relabelled(i, j) == relabelled(0, (j - i + n) % n);
  ASSERT_FALSE(circulant);
  ASSERT_FALSE(relabelled.isApprox(relabelled.transpose()));

  EXPECT_NEAR(second_largest_modulus(W), second_largest_modulus(relabelled), 1e-10);
  const auto a = eigenvalues(W);
  auto b = eigenvalues(relabelled);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& value : a) {  // match each to the nearest unused one
    const auto nearest = std::min_element(b.begin(), b.end(), [&](const auto& x, const auto& y) {
      return std::abs(x - value) < std::abs(y - value);
    });
    EXPECT_LT(std::abs(*nearest - value), 1e-9) << value;
    b.erase(nearest);
  }
}

TEST(Spectral, CompleteAndHypercube) {
  EXPECT_NEAR(second_largest_modulus(mixing_matrix(make("complete", 100), Weights::uniform, 1)), 0.0, 1e-12);
  // Hypercube, uniform 1/(d+1): eigenvalues (1 + d - 2 w) / (d + 1), w = 0..d.
  EXPECT_NEAR(second_largest_modulus(mixing_matrix(make("hypercube", 256), Weights::uniform, 1)), 7.0 / 9.0, 1e-12);
}

TEST(Spectral, RandomRegularHasAGap) {
  // Friedman: the adjacency spectrum of a random K-regular graph is within
  // 2 sqrt(K - 1) + o(1) of 0 apart from K, so rho ~ (1 + 2 sqrt(7)) / 9 = 0.699.
  const double rho = second_largest_modulus(mixing_matrix(make("random-regular:8", 1024, 1), Weights::uniform, 1));
  std::printf("random-regular:8 on 1024 peers, seed 1, uniform: rho = %.6f\n", rho);
  EXPECT_GT(rho, 0.6);
  EXPECT_LT(rho, 0.75);
}

TEST(Spectral, LaplacianLambda2) {
  for (int n : {5, 64, 1024})
    EXPECT_NEAR(laplacian_lambda2(make("ring", n)), 2.0 - 2.0 * std::cos(2 * pi / n), 1e-10) << n;
  for (int n : {2, 16, 512}) EXPECT_NEAR(laplacian_lambda2(make("hypercube", n)), 2.0, 1e-10) << n;
  EXPECT_NEAR(laplacian_lambda2(make("complete", 50)), 50.0, 1e-10);
  EXPECT_NEAR(laplacian_lambda2(make("torus", 1024)), 2.0 - 2.0 * std::cos(2 * pi / 32), 1e-10);
  EXPECT_EQ(laplacian_lambda2(make("ring", 1)), 0.0);
}

TEST(Spectral, PredictedVarianceRatio) {
  const auto complete = predicted_variance_ratio(make("complete", 64), Weights::uniform, 5);
  ASSERT_EQ(complete.size(), 6u);
  EXPECT_EQ(complete[0], 1.0);
  for (int t = 1; t <= 5; ++t) EXPECT_NEAR(complete[static_cast<std::size_t>(t)], 0.0, 1e-24);

  const auto ring = predicted_variance_ratio(make("ring", 64), Weights::uniform, 400);
  EXPECT_EQ(ring[0], 1.0);
  for (std::size_t t = 1; t < ring.size(); ++t) ASSERT_LT(ring[t], ring[t - 1]) << t;
  // Late rounds: the two slowest modes dominate, ratio ~ 2 rho^(2t) / (N - 1).
  const double rho = 1.0 / 3.0 + 2.0 / 3.0 * std::cos(2 * pi / 64);
  EXPECT_NEAR(ring[400] / (2 * std::pow(rho, 800) / 63), 1.0, 0.01);

  // Against the definition: E[var_t] / E[var_0] = tr((W^t)^T (I - J) W^t) / (N - 1).
  for (const char* text : {"ring", "exp", "torus"}) {
    const int n = 12;
    const Topology g = make(text, n);
    const auto predicted = predicted_variance_ratio(g, Weights::uniform, 6);
    const Eigen::MatrixXd W = mixing_matrix(g, Weights::uniform, 1);
    const Eigen::MatrixXd centre = Eigen::MatrixXd::Identity(n, n) - Eigen::MatrixXd::Constant(n, n, 1.0 / n);
    Eigen::MatrixXd power = Eigen::MatrixXd::Identity(n, n);
    for (int t = 0; t <= 6; ++t) {
      const double direct = (power.transpose() * centre * power).trace() / (n - 1);
      EXPECT_NEAR(predicted[static_cast<std::size_t>(t)], direct, 1e-12) << text << " t = " << t;
      power = W * power;
    }
  }
  EXPECT_TRUE(starts_with(config_error([] { predicted_variance_ratio(make("one-peer-exp", 8), Weights::uniform, 3); }),
                          "predicted_variance_ratio: "));
  EXPECT_EQ(predicted_variance_ratio(make("ring", 1), Weights::uniform, 2), (std::vector<double>{1.0, 0.0, 0.0}));
}

}  // namespace
}  // namespace avb
