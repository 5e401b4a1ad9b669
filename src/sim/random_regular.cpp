// Random regular graphs: incremental stub pairing, the complement for dense ones
// and a random Hamiltonian cycle for K = 2.
#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sim/graphs.hpp"

namespace avb::graph {

namespace {

// The lists of a graph that grows to degree k: peer u's neighbours are
// ends[u*k, u*k + degree[u]). One allocation instead of one per peer, so that an
// attempt on millions of peers starts (and a stop unwinds) in milliseconds.
struct GrowingLists {
  int k = 0;
  std::unique_ptr<int[]> ends;  // not zeroed: only the first degree[u] of a list are read
  std::vector<int> degree;

  void reset(int n, int degree_k) {
    k = degree_k;
    ends = std::make_unique_for_overwrite<int[]>(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
    degree.assign(static_cast<std::size_t>(n), 0);
  }
  std::span<const int> of(int u) const {
    return {ends.get() + static_cast<std::size_t>(u) * static_cast<std::size_t>(k),
            static_cast<std::size_t>(degree[static_cast<std::size_t>(u)])};
  }
  void add(int u, int v) {
    ends[static_cast<std::size_t>(u) * static_cast<std::size_t>(k) +
         static_cast<std::size_t>(degree[static_cast<std::size_t>(u)]++)] = v;
  }
  AdjacencyLists lists(const std::atomic<bool>* stop) const {
    AdjacencyLists adj(degree.size());
    for (std::size_t u = 0; u < adj.size(); ++u) {
      if ((u & 65535) == 0) check_stop(stop);
      const auto own = of(static_cast<int>(u));
      adj[u].assign(own.begin(), own.end());
    }
    return adj;
  }
};

// Tracks which pairs are already edges while a random graph grows. Degrees up to
// 64 scan the (short) lists; denser graphs use a bit matrix when it is small
// (n <= 16384: at most 32 MB), else a hash set of pair keys.
class EdgeSet {
 public:
  EdgeSet(const GrowingLists& adj, int n, int k) : adj_(adj), n_(static_cast<std::size_t>(n)) {
    if (k <= 64) mode_ = Mode::scan;
    else if (n_ <= 16384) mode_ = Mode::bits, bits_.assign(n_ * n_, false);
    else mode_ = Mode::hash;
  }
  bool contains(int u, int v) const {
    switch (mode_) {
      case Mode::bits: return bits_[static_cast<std::size_t>(u) * n_ + static_cast<std::size_t>(v)];
      case Mode::hash: return keys_.count(key(u, v)) != 0;
      case Mode::scan: break;
    }
    const auto list = adj_.of(u);
    return std::find(list.begin(), list.end(), v) != list.end();
  }
  void insert(int u, int v) {
    if (mode_ == Mode::bits) {
      bits_[static_cast<std::size_t>(u) * n_ + static_cast<std::size_t>(v)] = true;
      bits_[static_cast<std::size_t>(v) * n_ + static_cast<std::size_t>(u)] = true;
    } else if (mode_ == Mode::hash) {
      keys_.insert(key(u, v));
    }
  }

 private:
  enum class Mode { scan, bits, hash };
  static std::uint64_t key(int u, int v) {
    const auto [lo, hi] = std::minmax(u, v);
    return (static_cast<std::uint64_t>(lo) << 32) | static_cast<std::uint32_t>(hi);
  }
  const GrowingLists& adj_;
  std::size_t n_;
  Mode mode_ = Mode::scan;
  std::vector<bool> bits_;
  std::unordered_set<std::uint64_t> keys_;
};

// One attempt at a simple k-regular graph by incremental stub pairing (Steger and
// Wormald 1999): draw two of the remaining stubs uniformly; join them unless that
// makes a self-loop or a multi-edge, else draw again. Asymptotically uniform for
// small k. Returns false when the remaining stubs admit no legal pair, so the
// caller restarts with the next attempt counter. Draws use the counter
// (attempt, edges placed so far, draw number) of the topology stream.
bool pair_stubs(int n, int k, const Stream& stream, std::uint64_t attempt, GrowingLists& adj,
                const std::atomic<bool>* stop) {
  adj.reset(n, k);
  EdgeSet edges(adj, n, k);
  std::vector<int> stubs(static_cast<std::size_t>(n) * static_cast<std::size_t>(k));
  for (std::size_t s = 0; s < stubs.size(); ++s) {
    if ((s & 1048575) == 0) check_stop(stop);
    stubs[s] = static_cast<int>(s / static_cast<std::size_t>(k));
  }

  std::size_t m = stubs.size();
  std::uint64_t placed = 0, draw = 0;
  int misses = 0;
  while (m > 0) {
    auto a = static_cast<std::size_t>(stream.below(m, attempt, placed, draw++));
    auto b = static_cast<std::size_t>(stream.below(m - 1, attempt, placed, draw++));
    if (b >= a) ++b;
    const int u = stubs[a], v = stubs[b];
    if (u != v && !edges.contains(u, v)) {
      if ((placed & 65535) == 0) check_stop(stop);
      adj.add(u, v);
      adj.add(v, u);
      edges.insert(u, v);
      // Swap-remove the higher index first so the lower one stays valid.
      const auto [lo, hi] = std::minmax(a, b);
      stubs[hi] = stubs[--m];
      stubs[lo] = stubs[--m];
      ++placed;
      draw = 0;
      misses = 0;
      continue;
    }
    // Many misses in a row only happen near the end, when few stubs remain: check
    // whether any legal pair is left at all.
    if (++misses < 64) continue;
    misses = 0;
    std::vector<int> left(stubs.begin(), stubs.begin() + static_cast<std::ptrdiff_t>(m));
    sort_unique(left);
    bool any = false;
    for (std::size_t p = 0; p < left.size() && !any; ++p)
      for (std::size_t q = p + 1; q < left.size() && !any; ++q) any = !edges.contains(left[p], left[q]);
    if (!any) return false;
  }
  return true;
}

std::string where(const TopologySpec& spec) { return "--topology " + to_string(spec) + ": "; }


// Dense (2K > n - 1): draw the complement, which is (n-1-K)-regular and sparser,
// and flip it. Minimum degree >= n/2 makes the result connected.
AdjacencyLists complement_of_sparse(int n, int k, const Stream& stream, const std::atomic<bool>* stop) {
  const int kc = n - 1 - k;
  GrowingLists comp;
  for (std::uint64_t attempt = 0;; ++attempt)
    if (pair_stubs(n, kc, stream, attempt, comp, stop)) break;
  AdjacencyLists adj(static_cast<std::size_t>(n));
  std::vector<char> mark(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if ((i & 255) == 0) check_stop(stop);
    std::fill(mark.begin(), mark.end(), 0);
    for (int j : comp.of(i)) mark[static_cast<std::size_t>(j)] = 1;
    for (int j = 0; j < n; ++j)
      if (j != i && !mark[static_cast<std::size_t>(j)]) adj[static_cast<std::size_t>(i)].push_back(j);
  }
  return adj;
}

// K = 2: the connected 2-regular graphs are the Hamiltonian cycles, and a uniformly
// random permutation read as a cycle gives each of them equally often.
// Fisher-Yates with counters (0, position, 0).
AdjacencyLists random_cycle(int n, const Stream& stream) {
  std::vector<int> order(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  for (int i = n - 1; i > 0; --i) {
    const auto j = stream.below(static_cast<std::uint64_t>(i) + 1, 0, static_cast<std::uint64_t>(i), 0);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  AdjacencyLists adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int u = order[static_cast<std::size_t>(i)], v = order[static_cast<std::size_t>((i + 1) % n)];
    adj[static_cast<std::size_t>(u)].push_back(v);
    adj[static_cast<std::size_t>(v)].push_back(u);
  }
  return adj;
}

}  // namespace

// Refuses the (K, n) for which no connected simple K-regular graph exists.
void check_random_regular(const TopologySpec& spec, int n) {
  const int k = spec.degree;
  if (k >= n)
    throw ConfigError(where(spec) + "needs K below the number of peers (got K = " + std::to_string(k) + ", " +
                      std::to_string(n) + " peers)");
  if ((static_cast<std::int64_t>(n) * k) % 2 != 0)
    throw ConfigError(where(spec) + "needs the number of peers times K to be even (got " + std::to_string(n) +
                      " peers, K = " + std::to_string(k) + ")");
  if (k == 1 && n != 2)
    throw ConfigError(where(spec) + "a 1-regular graph is a perfect matching, connected only for 2 peers (got " +
                      std::to_string(n) + ")");
}

AdjacencyLists random_regular(const TopologySpec& spec, int n, std::uint64_t seed, const std::atomic<bool>* stop) {
  check_random_regular(spec, n);
  const int k = spec.degree;
  const Stream stream(seed, StreamId::topology);
  if (2 * k > n - 1) return complement_of_sparse(n, k, stream, stop);
  if (k == 2) return random_cycle(n, stream);
  // k >= 3: random regular graphs are connected with high probability; a
  // disconnected draw is thrown away like a stuck one.
  constexpr std::uint64_t max_attempts = 10000;
  GrowingLists grown;
  for (std::uint64_t attempt = 0; attempt < max_attempts; ++attempt) {
    if (!pair_stubs(n, k, stream, attempt, grown, stop)) continue;
    AdjacencyLists adj = grown.lists(stop);
    if (first_unreachable(adj) < 0) return adj;
  }
  throw ConfigError(where(spec) + "found no connected " + std::to_string(k) + "-regular graph on " +
                    std::to_string(n) + " peers in " + std::to_string(max_attempts) + " attempts");
}

}  // namespace avb::graph
