// Group formation for moshpit and random-groups: grid shapes, placement, shuffles,
// the random-groups split, the butterfly's failure rule, and the contraction rate
// of random groups against theory (on the sequential engine).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "protocols/grid.hpp"
#include "protocols/groups.hpp"
#include "protocols/random_groups.hpp"
#include "run/averaging.hpp"
#include "support/sequential_trial.hpp"

namespace avb {
namespace {

std::string grid_error(const std::string& text) {
  try {
    parse_grid(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Grid, ParsesShapes) {
  EXPECT_EQ(parse_grid("32x32"), (std::vector<int>{32, 32}));
  EXPECT_EQ(parse_grid("8x8x8"), (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(parse_grid("1024"), (std::vector<int>{1024}));
  EXPECT_EQ(grid_to_string(parse_grid("4x2x9")), "4x2x9");
  for (const char* bad : {"", "x", "32x", "x32", "0x4", "4x0", "a", "4x-1", "4X4", "4 x4", "1234567890"})
    EXPECT_EQ(grid_error(bad).rfind("--grid: '" + std::string(bad) + "' is not a grid shape", 0), 0u) << bad;
  EXPECT_EQ(grid_error("4096x4096x4096").rfind("--grid: '4096x4096x4096' has more than", 0), 0u);
}

TEST(Grid, DefaultIsTheSmallestSquareThatHoldsEveryone) {
  EXPECT_EQ(default_grid(1024), (std::vector<int>{32, 32}));
  EXPECT_EQ(default_grid(1025), (std::vector<int>{33, 33}));
  EXPECT_EQ(default_grid(900), (std::vector<int>{30, 30}));
  EXPECT_EQ(default_grid(901), (std::vector<int>{31, 31}));
  EXPECT_EQ(default_grid(1), (std::vector<int>{1, 1}));
  EXPECT_EQ(default_grid(2), (std::vector<int>{2, 2}));
}

TEST(Grid, TooSmallForThePeersIsRefused) {
  try {
    check_grid(std::vector<int>{4, 4}, 17);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--grid: 4x4 has 16 cells, fewer than the 17 peers");
  }
  EXPECT_NO_THROW(check_grid(std::vector<int>{4, 4}, 16));
}

TEST(Grid, CoordinatesAreRowMajor) {
  const std::vector<int> sides{3, 4, 5};
  EXPECT_EQ(axis_stride(sides, 0), 20);
  EXPECT_EQ(axis_stride(sides, 2), 1);
  const std::int64_t cell = 2 * 20 + 3 * 5 + 4;
  EXPECT_EQ(cell_coordinate(sides, cell, 0), 2);
  EXPECT_EQ(cell_coordinate(sides, cell, 1), 3);
  EXPECT_EQ(cell_coordinate(sides, cell, 2), 4);
}

TEST(Placement, RandomCellsAreDistinctInRangeAndKeyed) {
  const std::vector<int> sides{32, 32};
  for (int n : {1, 512, 900, 1024}) {
    const auto cells = place_peers(5, sides, n, Placement::random);
    ASSERT_EQ(static_cast<int>(cells.size()), n);
    EXPECT_EQ(std::set<std::int64_t>(cells.begin(), cells.end()).size(), cells.size());
    for (auto c : cells) EXPECT_TRUE(c >= 0 && c < 1024);
    EXPECT_EQ(cells, place_peers(5, sides, n, Placement::random));
  }
  // Fewer peers take a prefix of the same placement (the shuffle runs from the back).
  const auto all = place_peers(5, sides, 1024, Placement::random);
  const auto some = place_peers(5, sides, 512, Placement::random);
  EXPECT_TRUE(std::equal(some.begin(), some.end(), all.begin()));
  EXPECT_NE(all, place_peers(6, sides, 1024, Placement::random));
  const auto ranked = place_peers(5, sides, 100, Placement::rank);
  for (int p = 0; p < 100; ++p) EXPECT_EQ(ranked[p], p);
}

TEST(Placement, EveryCellIsEquallyLikely) {
  // Peer 0's cell over 4000 seeds on a 4x4 grid: 250 expected per cell.
  std::vector<int> hits(16, 0);
  for (std::uint64_t seed = 0; seed < 4000; ++seed) ++hits[place_peers(seed, std::vector<int>{4, 4}, 3, Placement::random)[0]];
  double chi2 = 0.0;
  for (int h : hits) chi2 += (h - 250.0) * (h - 250.0) / 250.0;
  EXPECT_LT(chi2, 37.7);  // 99.9th percentile of chi-square with 15 degrees of freedom
}

TEST(Shuffle, IsAKeyedPermutation) {
  std::vector<int> peers(100);
  std::iota(peers.begin(), peers.end(), 0);
  std::vector<int> a = peers, b = peers, c = peers;
  shuffle_peers(a, 9, 1);
  shuffle_peers(b, 9, 1);
  shuffle_peers(c, 9, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, peers);
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, peers);
  // Shuffling a subset keeps the subset's relative order from the full shuffle.
  std::vector<int> full = peers, odd;
  shuffle_peers(full, 9, 1);
  for (int p = 1; p < 100; p += 2) odd.push_back(p);
  shuffle_peers(odd, 9, 1);
  std::vector<int> expected;
  for (int p : full)
    if (p % 2 == 1) expected.push_back(p);
  EXPECT_EQ(odd, expected);
}

TEST(RandomGroups, LeftoversSpreadRoundRobin) {
  // 1000 alive of 1024: 31 groups, the 8 leftovers make groups 0..7 one larger.
  std::vector<int> size(31, 0);
  for (int i = 0; i < 1000; ++i) ++size[random_group_of(i, 1000, 32)];
  EXPECT_EQ(random_group_count(1000, 32), 31);
  for (int q = 0; q < 31; ++q) EXPECT_EQ(size[q], q < 8 ? 33 : 32) << q;
  // Fewer participants than a group: one group of everyone.
  EXPECT_EQ(random_group_count(20, 32), 1);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(random_group_of(i, 20, 32), 0);
  // 63 of size 32: one group of 63 (leftovers join it).
  for (int i = 0; i < 63; ++i) EXPECT_EQ(random_group_of(i, 63, 32), 0);
}

TEST(Butterfly, FailedSenderDeliversItsFirstPartsInOrder) {
  const int n = 5;
  const MemberFate alive{}, before{true, 0}, two{true, 2}, all{true, 4};
  for (int r = 0; r < n; ++r) EXPECT_EQ(delivers(alive, 3, r, n), r != 3 || true);
  for (int r = 0; r < n; ++r) EXPECT_FALSE(delivers(before, 3, r, n));
  // Member 3 sends to 4, 0, 1, 2 in that order.
  EXPECT_TRUE(delivers(two, 3, 4, n));
  EXPECT_TRUE(delivers(two, 3, 0, n));
  EXPECT_FALSE(delivers(two, 3, 1, n));
  EXPECT_FALSE(delivers(two, 3, 2, n));
  EXPECT_FALSE(delivers(two, 3, 3, n));
  for (int r = 0; r < n; ++r) EXPECT_EQ(delivers(all, 3, r, n), r != 3);
  // Parts cover the vector, in order, also when it is shorter than the group.
  for (std::size_t length : {0u, 1u, 4u, 5u, 17u}) {
    std::size_t next = 0;
    for (int p = 0; p < n; ++p) {
      const Part part = butterfly_part(length, n, p);
      EXPECT_EQ(part.begin, next);
      next = part.end;
    }
    EXPECT_EQ(next, length);
  }
  for (int peer = 0; peer < 200; ++peer) {
    const int k = parts_delivered(3, 2, peer, 7);
    EXPECT_TRUE(k >= 0 && k < 7);
  }
}

// The paper's theory: a uniformly random split into r groups contracts the expected
// variance by exactly (r-1)/(N-1) per round, whatever the group sizes. Measured as
// the mean over trials and rounds of variance[t] / variance[t-1] (each ratio has
// that expectation given the state before the round).
TEST(RandomGroups, ContractionMatchesTheory) {
  for (int n : {1024, 900, 100}) {
    AveragingOptions o;
    o.protocol.name = "random-groups";
    o.rounds = 4;
    o.trials = 1;
    o.seed = 31;
    double sum = 0.0;
    int count = 0;
    const int trials = n >= 900 ? 400 : 2000;
    for (int trial = 0; trial < trials; ++trial) {
      const TrialRecord record = test::sequential_trial(o, n, trial);
      for (std::size_t t = 1; t < record.rows.size(); ++t) {
        sum += record.rows[t].variance / record.rows[t - 1].variance;
        ++count;
      }
    }
    const int r = std::max(1, n / 32);
    const double theory = (r - 1.0) / (n - 1.0);
    const double measured = sum / count;
    std::printf("random groups, N = %d, r = %d: contraction %.5f per round, theory (r-1)/(N-1) = %.5f (%+.1f%%)\n", n,
                r, measured, theory, 100.0 * (measured / theory - 1.0));
    EXPECT_NEAR(measured / theory, 1.0, 0.05) << "N = " << n << ": measured " << measured << ", theory " << theory;
  }
}

// Averaging in groups never raises the variance; with survivors it keeps the mean.
TEST(Moshpit, VarianceNeverRisesAndSurvivorsKeepTheMean) {
  for (const char* key : {"axis", "chunk"}) {
    AveragingOptions o;
    o.protocol.name = "moshpit";
    o.protocol.moshpit.key_update = parse_key_update(key);
    o.protocol.moshpit.grid = {32, 32};
    o.fail_rate = 0.05;
    o.rounds = 10;
    o.seed = 4;
    for (int n : {512, 900}) {
      const TrialRecord record = test::sequential_trial(o, n, 0);
      for (std::size_t t = 1; t < record.rows.size(); ++t) {
        EXPECT_LE(record.rows[t].variance, record.rows[t - 1].variance * (1 + 1e-12)) << key << " N=" << n;
        EXPECT_LE(record.rows[t].mean_drift, 1e-28);
      }
      EXPECT_LT(record.rows.back().variance, 1e-4) << key << " N=" << n;
    }
  }
}

TEST(Options, GroupFlagsAreChecked) {
  AveragingOptions o;
  o.protocol.name = "random-groups";
  o.protocol.random_groups.group_size = 1;
  EXPECT_THROW(resolve(o, 8), ConfigError);
  o.protocol.random_groups.group_size = 2;
  o.protocol.min_group_size = 1;
  try {
    resolve(o, 8);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--min-group-size: 1 is not an integer >= 2");
  }
  AveragingOptions m;
  m.protocol.name = "moshpit";
  EXPECT_EQ(resolve(m, 1000).protocol.moshpit.grid, (std::vector<int>{32, 32}));
  EXPECT_EQ(*resolve(m, 1000).protocol.on_failure, FailureSemantics::survivors);
  m.protocol.moshpit.grid = {8, 8};
  EXPECT_THROW(resolve(m, 65), ConfigError);
  m.protocol.on_failure = FailureSemantics::partial;
  EXPECT_NO_THROW(resolve(m, 64));
}

}  // namespace
}  // namespace avb
