// --split dirichlet (sgd/split.cpp): every row goes to exactly one peer, no peer is
// empty, the split is a pure function of the seed, and the shares it deals have
// the moments of Dir(alpha): mean 1/N, variance (1/N)(1 - 1/N)/(N alpha + 1),
// on either branch of the Gamma sampler (alpha < 1 and alpha >= 1).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "sgd/objective.hpp"

namespace avb {
namespace {

// `classes` classes of `each` rows, interleaved (row r has class r mod classes).
Eigen::VectorXd interleaved_labels(int classes, int each) {
  Eigen::VectorXd labels(classes * each);
  for (Eigen::Index r = 0; r < labels.size(); ++r) labels[r] = static_cast<double>(r % classes);
  return labels;
}

TEST(DirichletSplit, DealsEveryRowOnceToNonEmptyPeersKeyedBySeed) {
  const Eigen::VectorXd labels = interleaved_labels(10, 20);
  for (double alpha : {0.01, 0.5, 100.0}) {
    const SplitSpec split{DataSplit::dirichlet, alpha};
    const auto shards = peer_rows(labels, split, 50, 7);
    std::multiset<int> seen;
    for (const auto& rows : shards) {
      EXPECT_FALSE(rows.empty()) << "alpha " << alpha;
      EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
      seen.insert(rows.begin(), rows.end());
    }
    EXPECT_EQ(seen.size(), 200u);
    EXPECT_EQ(std::set<int>(seen.begin(), seen.end()).size(), 200u) << "a row dealt twice";
    EXPECT_EQ(shards, peer_rows(labels, split, 50, 7));
    EXPECT_NE(shards, peer_rows(labels, split, 50, 8));
    EXPECT_EQ(shard_rows(labels, split, 3, 50, 7), shards[3]);
    const std::vector<int> owners = row_owners(labels, split, 50, 7);
    for (int r : shards[3]) EXPECT_EQ(owners[static_cast<std::size_t>(r)], 3);
  }
  // Few classes a peer at small alpha, all of them at large alpha (10 peers, 10 classes).
  auto mean_classes = [&](double alpha) {
    double sum = 0;
    for (const auto& rows : peer_rows(labels, SplitSpec{DataSplit::dirichlet, alpha}, 10, 3)) {
      std::set<int> classes;
      for (int r : rows) classes.insert(r % 10);
      sum += static_cast<double>(classes.size()) / 10;
    }
    return sum;
  };
  EXPECT_LT(mean_classes(0.05), 3.0);
  EXPECT_EQ(mean_classes(1000.0), 10.0);
}

TEST(DirichletSplit, SharesHaveTheMomentsOfTheDirichlet) {
  constexpr int kClasses = 1000, kEach = 400, kPeers = 4;
  const Eigen::VectorXd labels = interleaved_labels(kClasses, kEach);
  for (double alpha : {0.5, 2.0}) {
    const auto shards = peer_rows(labels, SplitSpec{DataSplit::dirichlet, alpha}, kPeers, 11);
    std::vector<double> share(kClasses, 0.0);  // peer 0's share of each class
    for (int r : shards[0]) share[static_cast<std::size_t>(r % kClasses)] += 1.0 / kEach;
    double mean = 0, squares = 0;
    for (double s : share) mean += s / kClasses;
    for (double s : share) squares += (s - mean) * (s - mean) / (kClasses - 1);
    const double want = (1.0 / kPeers) * (1 - 1.0 / kPeers) / (kPeers * alpha + 1);
    // 4 standard errors: sqrt(want / K) for the mean; 25 % for the variance of 1000
    // Beta draws (its standard error is about 6 % here).
    EXPECT_NEAR(mean, 1.0 / kPeers, 4 * std::sqrt(want / kClasses)) << "alpha " << alpha;
    EXPECT_NEAR(squares / want, 1.0, 0.25) << "alpha " << alpha;
  }
}

}  // namespace
}  // namespace avb
