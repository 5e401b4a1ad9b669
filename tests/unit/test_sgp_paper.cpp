// Protocol sgp-paper's graphs against the authors' construction: numpy's np.roll of
// the identity matrix without an axis, done here literally on the flattened matrix.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "protocols/gossip.hpp"

namespace avb {
namespace {

// Row i of the multiset of edges of graph h, built the authors' way: the self loop,
// then for k = 2^h and 2^(h+1) the columns of row i's ones in the n x n identity
// after np.roll(eye, k) (the flattened matrix rotated right by k places).
std::vector<std::vector<int>> rolled_rows(int n, int h) {
  std::vector<std::vector<int>> rows(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)].push_back(i);
  const std::size_t size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
  for (int k : {1 << h, 2 << h}) {
    std::vector<char> flat(size, 0);
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) flat[i * static_cast<std::size_t>(n) + i] = 1;
    std::rotate(flat.begin(), flat.end() - k, flat.end());
    for (std::size_t p = 0; p < size; ++p)
      if (flat[p] != 0) rows[p / static_cast<std::size_t>(n)].push_back(static_cast<int>(p % static_cast<std::size_t>(n)));
  }
  for (auto& row : rows) std::sort(row.begin(), row.end());
  return rows;
}

TEST(SgpPaperGraph, PeriodIsFloorLog2OfNMinusOne) {
  for (auto [n, period] : {std::pair{3, 1}, {4, 1}, {5, 2}, {8, 2}, {9, 3}, {17, 4}, {512, 8}, {513, 9}, {768, 9},
                           {900, 9}, {1024, 9}, {1025, 10}})
    EXPECT_EQ(sgp_paper_period(n), period) << "n=" << n;
  EXPECT_THROW(sgp_paper_period(2), ConfigError);
  EXPECT_THROW(sgp_paper_period(1), ConfigError);
}

// What numpy prints for np.nonzero(np.roll(np.eye(5), 1)) and (..., 2): row 0 gets
// two ones per shift, row 5 - k none.
TEST(SgpPaperGraph, MatchesNumpyAtFivePeers) {
  std::vector<int> got;
  sgp_paper_sources(5, 2, 0, got);  // round 2: h = 0, k = 1 and 2
  EXPECT_EQ(got, (std::vector<int>{0, 0, 1, 1, 2}));  // self; k = 1: 0, 1; k = 2: 1, 2
  sgp_paper_sources(5, 2, 3, got);
  EXPECT_EQ(got, (std::vector<int>{3, 4}));
  sgp_paper_sources(5, 2, 4, got);
  EXPECT_EQ(got, (std::vector<int>{0, 4}));
  sgp_paper_sources(512, 1, 0, got);  // round 1 uses graph 1: k = 2 and 4
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
}

// Every graph of every size: sources are the rolled rows, and sinks are exactly the
// transposed relation, multiplicities included.
TEST(SgpPaperGraph, SourcesAndSinksAreTheRolledIdentity) {
  for (int n : {3, 4, 5, 8, 17, 512, 768, 900}) {
    const int period = sgp_paper_period(n);
    for (int h = 0; h < period; ++h) {
      const int t = h == 0 ? period : h;  // a round that uses graph h
      const auto want = rolled_rows(n, h);
      std::vector<std::vector<int>> pulled_by(static_cast<std::size_t>(n));
      std::vector<int> got;
      for (int i = 0; i < n; ++i) {
        sgp_paper_sources(n, t, i, got);
        ASSERT_EQ(got, want[static_cast<std::size_t>(i)]) << "n=" << n << " h=" << h << " row " << i;
        for (int j : got) pulled_by[static_cast<std::size_t>(j)].push_back(i);
      }
      for (int j = 0; j < n; ++j) {
        sgp_paper_sinks(n, t, j, got);
        auto& expected = pulled_by[static_cast<std::size_t>(j)];
        std::sort(expected.begin(), expected.end());
        ASSERT_EQ(got, expected) << "n=" << n << " h=" << h << " column " << j;
      }
    }
  }
}

}  // namespace
}  // namespace avb
