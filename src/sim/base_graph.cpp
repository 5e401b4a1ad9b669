// The Base-(k+1) schedule of --topology base:K (Takezawa et al., NeurIPS 2023,
// "simple Base-(k+1) graph"): a finite sequence of weighted graphs, each peer with
// at most K neighbours a round, whose product is exactly the averaging matrix for
// any N. The construction, with a clique of size f meaning "its members average":
//
//  - N whose prime factors are all <= K + 1: N = f_1 ... f_m with every f_r <= K + 1;
//    in round r the peers that differ only in mixed-radix digit r form a clique
//    (the "hyper-hypercube"): after m rounds everyone holds the mean.
//  - any other N: written in base K + 1, N = sum_l a_l (K + 1)^p_l (p_0 > p_1 > ...,
//    1 <= a_l <= K); group V_l of a_l (K + 1)^p_l consecutive peers, cut into a_l
//    blocks of (K + 1)^p_l. Every group first averages itself (its hyper-hypercube;
//    the smaller ones repeat theirs until the largest is done). Then in round
//    M + l (l = 0 .. L - 2) every peer of the later groups V_{l+1..} (R peers, fewer
//    than a block) meets one fresh peer of each block of V_l (A peers): a later
//    peer keeps R / (R + A) of its value and takes A / ((R + A) a_l) from each of
//    its partners, which keep all but that weight. Each block's sum then holds the
//    mean of V_l and everything after it, and the later groups keep their share of
//    that sum; the block's hyper-hypercube spreads it (in the rounds after, beside
//    the later merges). When V_0's blocks are done, every peer holds the mean.
//
// Every round's matrix is symmetric and doubly stochastic; a peer is in at most
// one clique or merge a round.
#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "sim/graphs.hpp"

namespace avb::graph {

namespace {

using Round = std::vector<MixingRow>;  // one row per peer

// The clique rounds that average `count` consecutive peers from `first`: in each
// round, the lists of peers that average together.
std::vector<std::vector<std::vector<int>>> hyper_hypercube(int first, int count, int k) {
  std::vector<int> factors;
  int rest = count;
  for (int f = k + 1; f >= 2 && rest > 1; --f)
    while (rest % f == 0) {
      factors.push_back(f);
      rest /= f;
    }
  if (rest != 1) throw std::logic_error("hyper_hypercube: " + std::to_string(count) + " has a prime factor above K + 1");
  std::vector<std::vector<std::vector<int>>> rounds;
  int stride = 1;
  for (int f : factors) {
    std::vector<std::vector<int>> cliques;
    for (int i = 0; i < count; ++i) {
      if ((i / stride) % f != 0) continue;  // the clique's first member lists it
      std::vector<int> clique;
      for (int d = 0; d < f; ++d) clique.push_back(first + i + d * stride);
      cliques.push_back(std::move(clique));
    }
    rounds.push_back(std::move(cliques));
    stride *= f;
  }
  return rounds;
}

bool factors_within(int n, int k) {
  for (int f = k + 1; f >= 2; --f)
    while (n % f == 0) n /= f;
  return n == 1;
}

void add_cliques(Round& round, const std::vector<std::vector<int>>& cliques) {
  for (const auto& clique : cliques)
    for (int i : clique) {
      MixingRow& row = round[static_cast<std::size_t>(i)];
      row.peers = clique;
      row.weights.assign(clique.size(), 1.0 / static_cast<double>(clique.size()));
    }
}

// Row i gets weight w on peer j (and loses it from its own).
void add_edge(Round& round, int i, int j, double w) {
  MixingRow& row = round[static_cast<std::size_t>(i)];
  const auto at = std::lower_bound(row.peers.begin(), row.peers.end(), j) - row.peers.begin();
  row.peers.insert(row.peers.begin() + at, j);
  row.weights.insert(row.weights.begin() + at, w);
  const auto self = std::find(row.peers.begin(), row.peers.end(), i) - row.peers.begin();
  row.weights[static_cast<std::size_t>(self)] -= w;
}

// A round where nobody talks; the stop flag is polled once a round (O(n) work each).
Round identity(int n, const std::atomic<bool>* stop = nullptr) {
  check_stop(stop);
  Round round(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) round[static_cast<std::size_t>(i)] = MixingRow{{i}, {1.0}};
  return round;
}

// A group of peers: a nonzero digit a of n in base K + 1 at place (K + 1)^p, as
// `blocks` = a blocks of `block` = (K + 1)^p consecutive peers from `first`.
struct Group {
  int first, size, blocks, block;
};

// n's groups, largest first.
std::vector<Group> digit_groups(int n, int k) {
  std::vector<Group> groups;
  long long place = 1;
  while (place * (k + 1) <= n) place *= k + 1;
  for (int first = 0; place >= 1; place /= k + 1) {
    const int digit = static_cast<int>((n - first) / place);
    if (digit == 0) continue;
    groups.push_back({first, static_cast<int>(digit * place), digit, static_cast<int>(place)});
    first += static_cast<int>(digit * place);
  }
  return groups;
}

// The merge of every later peer into group g's blocks (the weights of the file's comment).
void merge_into(Round& round, const Group& g, int n) {
  const int later = n - g.first - g.size;
  const double share = static_cast<double>(g.size) / (g.size + later), w = share / g.blocks;
  for (int b = 0; b < g.blocks; ++b)
    for (int i = 0; i < later; ++i) {
      const int peer = g.first + g.size + i, partner = g.first + b * g.block + i;
      add_edge(round, peer, partner, w);
      add_edge(round, partner, peer, w);
    }
}

}  // namespace

BaseSchedule base_schedule(int n, int k, const std::atomic<bool>* stop) {
  if (k < 1) throw ConfigError("--topology base:" + std::to_string(k) + ": K must be an integer >= 1");
  BaseSchedule schedule;
  schedule.n = std::max(n, 1);
  if (n <= 1) {
    schedule.add(identity(schedule.n));
    return schedule;
  }
  if (factors_within(n, k)) {
    for (const auto& cliques : hyper_hypercube(0, n, k)) {
      Round round = identity(n, stop);
      add_cliques(round, cliques);
      schedule.add(round);
    }
    return schedule;
  }
  const std::vector<Group> groups = digit_groups(n, k);
  const auto groups_n = static_cast<int>(groups.size());
  std::vector<std::vector<std::vector<std::vector<int>>>> own, blocks;  // each group's rounds, each block's
  for (const Group& g : groups) {
    own.push_back(hyper_hypercube(g.first, g.size, k));
    blocks.push_back(hyper_hypercube(0, g.block, k));
  }
  const auto m = static_cast<int>(own[0].size());
  for (int r = 0; r < m; ++r) {
    Round round = identity(n, stop);
    for (const auto& rounds : own)
      if (!rounds.empty()) add_cliques(round, rounds[static_cast<std::size_t>(r) % rounds.size()]);
    schedule.add(round);
  }
  const auto spread = static_cast<int>(blocks[0].size());
  for (int r = 0; r <= spread; ++r) {
    Round round = identity(n, stop);
    for (int l = 0; l + 1 < groups_n; ++l) {  // the last group only ever merges into the others
      const Group& g = groups[static_cast<std::size_t>(l)];
      const auto& block_rounds = blocks[static_cast<std::size_t>(l)];
      if (r == l) {  // the later groups merge into this one
        merge_into(round, g, n);
      } else if (r > l && r - l - 1 < static_cast<int>(block_rounds.size())) {  // its blocks spread the mean
        std::vector<std::vector<int>> cliques = block_rounds[static_cast<std::size_t>(r - l - 1)];
        for (int b = 0; b < g.blocks; ++b)
          for (auto clique : cliques) {
            for (int& i : clique) i += g.first + b * g.block;
            add_cliques(round, {clique});
          }
      }
    }
    schedule.add(round);
  }
  return schedule;
}

}  // namespace avb::graph

namespace avb {

void BaseSchedule::add(const std::vector<MixingRow>& round) {
  for (const MixingRow& row : round) {
    peers.insert(peers.end(), row.peers.begin(), row.peers.end());
    weights.insert(weights.end(), row.weights.begin(), row.weights.end());
    ends.push_back(peers.size());
  }
  ++rounds;
}

void BaseSchedule::row(int round, int i, MixingRow& out) const {
  const std::size_t at = static_cast<std::size_t>(round) * static_cast<std::size_t>(n) + static_cast<std::size_t>(i);
  const std::size_t first = at == 0 ? 0 : ends[at - 1], last = ends[at];
  out.peers.assign(peers.begin() + static_cast<std::ptrdiff_t>(first), peers.begin() + static_cast<std::ptrdiff_t>(last));
  out.weights.assign(weights.begin() + static_cast<std::ptrdiff_t>(first),
                     weights.begin() + static_cast<std::ptrdiff_t>(last));
}

}  // namespace avb
