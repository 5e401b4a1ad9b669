#include "sim/topology.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "core/suggest.hpp"
#include "core/parse.hpp"
#include "sim/graphs.hpp"

namespace avb {

namespace graph {

void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The smallest peer that breadth-first search from peer 0 does not reach, or -1
// when the graph is connected.
int first_unreachable(const AdjacencyLists& adj) {
  const int n = static_cast<int>(adj.size());
  if (n == 0) return -1;
  std::vector<char> seen(adj.size(), 0);
  std::vector<int> queue{0};
  seen[0] = 1;
  for (std::size_t head = 0; head < queue.size(); ++head)
    for (int j : adj[static_cast<std::size_t>(queue[head])])
      if (!seen[static_cast<std::size_t>(j)]) {
        seen[static_cast<std::size_t>(j)] = 1;
        queue.push_back(j);
      }
  for (int i = 0; i < n; ++i)
    if (!seen[static_cast<std::size_t>(i)]) return i;
  return -1;
}

}  // namespace graph

namespace {

using graph::AdjacencyLists;

constexpr std::string_view accepted_topologies =
    "{ring, torus, hypercube, exp, one-peer-exp, random-regular:K, epidemic:S, base:K, complete, file:PATH}";

[[noreturn]] void bad_topology(std::string_view text) {
  static constexpr std::string_view kinds[] = {"ring", "torus", "hypercube", "exp", "one-peer-exp", "complete"};
  throw ConfigError("--topology: '" + std::string(text) + "' is not one of " + std::string(accepted_topologies) +
                    did_you_mean(text, kinds));
}

// Smallest c with 2^c >= n: the number of distinct offsets 2^j below n.
int ceil_log2(int n) {
  int c = 0;
  while ((std::int64_t{1} << c) < n) ++c;
  return c;
}

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// ---- generators -------------------------------------------------------------

AdjacencyLists ring_graph(int n) {
  AdjacencyLists adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) adj[static_cast<std::size_t>(i)] = {(i + 1) % n, (i + n - 1) % n};
  return adj;
}

AdjacencyLists torus_graph(int n) {
  int a = static_cast<int>(std::sqrt(static_cast<double>(n)));
  while (static_cast<std::int64_t>(a + 1) * (a + 1) <= n) ++a;  // exact integer square root
  while (static_cast<std::int64_t>(a) * a > n) --a;
  while (n % a != 0) --a;
  const int b = n / a;
  AdjacencyLists adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int r = i / b, c = i % b;
    adj[static_cast<std::size_t>(i)] = {((r + 1) % a) * b + c, ((r + a - 1) % a) * b + c, r * b + (c + 1) % b,
                                        r * b + (c + b - 1) % b};
  }
  return adj;
}

AdjacencyLists hypercube_graph(int n) {
  if (!is_power_of_two(n))
    throw ConfigError("--topology hypercube: needs the number of peers to be a power of two (got " +
                      std::to_string(n) + ")");
  AdjacencyLists adj(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    for (int bit = 1; bit < n; bit <<= 1) adj[static_cast<std::size_t>(i)].push_back(i ^ bit);
  return adj;
}

// The exponential graphs are computed, never stored (storing one-peer-exp's lists
// took 2 log2(N) allocations per peer, 12 GB at 4 million peers): i's neighbours
// i + sign * 2^j (mod n) for j in [first, last), sorted; 2^j < n for every
// j < ceil(log2 n), so the offsets are distinct and nonzero.
std::vector<int> exponential_neighbours(int n, int i, int first, int last, int sign) {
  std::vector<int> list;
  if (n < 2) return list;
  list.reserve(static_cast<std::size_t>(last - first));
  for (int j = first; j < last; ++j)
    list.push_back(static_cast<int>(((static_cast<long long>(i) + sign * (1LL << j)) % n + n) % n));
  std::sort(list.begin(), list.end());
  return list;
}

}  // namespace

// ---- names ------------------------------------------------------------------

std::string_view topology_names() { return accepted_topologies; }

TopologySpec parse_topology(std::string_view text) {
  TopologySpec spec;
  struct WithDegree {
    std::string_view prefix;
    TopologyKind kind;
    std::string_view degree;
  };
  for (const auto& [prefix, kind, degree] : {WithDegree{"random-regular:", TopologyKind::random_regular, "K"},
                                             WithDegree{"epidemic:", TopologyKind::epidemic, "S"},
                                             WithDegree{"base:", TopologyKind::base, "K"}}) {
    if (!text.starts_with(prefix)) continue;
    const auto k = parse_int(text.substr(prefix.size()));
    if (!k || *k < 1)
      throw ConfigError("--topology: '" + std::string(text) + "' is not one of " + std::string(accepted_topologies) +
                        " (" + std::string(degree) + " must be an integer >= 1)");
    spec.kind = kind;
    spec.degree = *k;
    return spec;
  }
  if (text == "ring") spec.kind = TopologyKind::ring;
  else if (text == "torus") spec.kind = TopologyKind::torus;
  else if (text == "hypercube") spec.kind = TopologyKind::hypercube;
  else if (text == "exp") spec.kind = TopologyKind::exp;
  else if (text == "one-peer-exp") spec.kind = TopologyKind::one_peer_exp;
  else if (text == "complete") spec.kind = TopologyKind::complete;
  else if (text.starts_with("file:") && text.size() > 5) {
    spec.kind = TopologyKind::file;
    spec.path = std::string(text.substr(5));
  } else {
    bad_topology(text);
  }
  return spec;
}

std::string to_string(const TopologySpec& spec) {
  switch (spec.kind) {
    case TopologyKind::ring: return "ring";
    case TopologyKind::torus: return "torus";
    case TopologyKind::hypercube: return "hypercube";
    case TopologyKind::exp: return "exp";
    case TopologyKind::one_peer_exp: return "one-peer-exp";
    case TopologyKind::random_regular: return "random-regular:" + std::to_string(spec.degree);
    case TopologyKind::epidemic: return "epidemic:" + std::to_string(spec.degree);
    case TopologyKind::base: return "base:" + std::to_string(spec.degree);
    case TopologyKind::complete: return "complete";
    case TopologyKind::file: return "file:" + spec.path;
  }
  return "?";
}

Weights parse_weights(std::string_view name) { return kWeightsNames.parse(name); }

std::string_view to_string(Weights weights) { return kWeightsNames.name(weights); }

// ---- the graph --------------------------------------------------------------

Topology::Topology(const TopologySpec& spec, int n, std::uint64_t seed, const std::atomic<bool>* stop)
    : spec_(spec), n_(n), seed_(seed), stop_(stop) {
  if (n < 1)
    throw ConfigError("--topology " + to_string(spec) + ": needs at least one peer (got " + std::to_string(n) + ")");
  AdjacencyLists adj;  // the stored kinds fill this
  switch (spec.kind) {
    case TopologyKind::ring: adj = ring_graph(n); break;
    case TopologyKind::torus: adj = torus_graph(n); break;
    case TopologyKind::hypercube: adj = hypercube_graph(n); break;
    case TopologyKind::exp:
    case TopologyKind::one_peer_exp: return;  // computed: see in_neighbours
    case TopologyKind::random_regular: adj = graph::random_regular(spec, n, seed, stop); break;
    case TopologyKind::complete: return;  // not stored: see in_neighbours
    case TopologyKind::epidemic:
      if (spec.degree > n - 1 && n > 1)
        throw ConfigError("--topology " + to_string(spec) + ": S must be below the number of peers (" +
                          std::to_string(n) + "): a peer sends to S others");
      return;  // drawn each round: see epidemic_targets
    case TopologyKind::base: base_ = graph::base_schedule(n, spec.degree, stop); return;
    case TopologyKind::file: adj = graph::read_edge_list(spec, n); break;
  }
  store_undirected(std::move(adj));
}

Topology::Topology(const TopologySpec& spec, int n, std::istream& edge_list) : spec_(spec), n_(n) {
  if (spec.kind != TopologyKind::file)
    throw std::invalid_argument("Topology: an edge-list stream needs a file:PATH spec, got " + to_string(spec));
  if (n < 1)
    throw ConfigError("--topology " + to_string(spec) + ": needs at least one peer (got " + std::to_string(n) + ")");
  store_undirected(graph::read_edge_list(edge_list, spec, n));
}

void Topology::store_undirected(std::vector<std::vector<int>> adj) {
  // One list per peer, stored once (in_).
  for (int i = 0; i < n_; ++i) {
    auto& list = adj[static_cast<std::size_t>(i)];
    std::erase(list, i);  // small rings and tori wrap onto themselves
    graph::sort_unique(list);
  }
  in_.assign(1, std::move(adj));
}

bool Topology::directed() const {
  return spec_.kind == TopologyKind::exp || spec_.kind == TopologyKind::one_peer_exp ||
         spec_.kind == TopologyKind::epidemic;
}

bool Topology::time_varying() const {
  return spec_.kind == TopologyKind::one_peer_exp || spec_.kind == TopologyKind::epidemic ||
         spec_.kind == TopologyKind::base;
}

int Topology::period() const {
  if (spec_.kind == TopologyKind::base) return base_.rounds;
  return spec_.kind == TopologyKind::one_peer_exp ? std::max(1, ceil_log2(n_)) : 1;
}

std::size_t Topology::phase(int t, int i) const {
  if (t < 1 || i < 0 || i >= n_)
    throw std::out_of_range("Topology: round " + std::to_string(t) + ", peer " + std::to_string(i) +
                            " (rounds start at 1, peers below " + std::to_string(n_) + ")");
  return static_cast<std::size_t>((t - 1) % period());
}

std::vector<int> Topology::in_neighbours(int t, int i) const {
  const std::size_t p = phase(t, i);
  if (spec_.kind == TopologyKind::complete) {
    std::vector<int> everyone;
    everyone.reserve(static_cast<std::size_t>(n_ > 0 ? n_ - 1 : 0));
    for (int j = 0; j < n_; ++j)
      if (j != i) everyone.push_back(j);
    return everyone;
  }
  if (spec_.kind == TopologyKind::exp) return exponential_neighbours(n_, i, 0, ceil_log2(n_), -1);
  if (spec_.kind == TopologyKind::one_peer_exp) return exponential_neighbours(n_, i, int(p), int(p) + 1, -1);
  if (spec_.kind == TopologyKind::epidemic) return epidemic_senders(t)[static_cast<std::size_t>(i)];
  if (spec_.kind == TopologyKind::base) {
    MixingRow row;
    base_.row(static_cast<int>(p), i, row);
    std::erase(row.peers, i);
    return row.peers;
  }
  return in_[p][static_cast<std::size_t>(i)];
}

std::vector<int> Topology::out_neighbours(int t, int i) const {
  if (!directed()) return in_neighbours(t, i);
  const auto p = static_cast<int>(phase(t, i));
  if (spec_.kind == TopologyKind::exp) return exponential_neighbours(n_, i, 0, ceil_log2(n_), 1);
  if (spec_.kind == TopologyKind::epidemic) return epidemic_targets(t, i);
  return exponential_neighbours(n_, i, p, p + 1, 1);  // one_peer_exp
}

std::vector<std::pair<int, int>> Topology::edges(int t) const {
  std::vector<std::pair<int, int>> result;
  for (int i = 0; i < n_; ++i)
    for (int j : out_neighbours(t, i)) result.emplace_back(std::min(i, j), std::max(i, j));
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

std::size_t Topology::undirected_degree(int t, int j) const {
  // The complete graph's lists are built on demand: its degree is known.
  if (spec_.kind == TopologyKind::complete) return static_cast<std::size_t>(n_ - 1);
  return in_[phase(t, j)][static_cast<std::size_t>(j)].size();
}

MixingRow Topology::mixing_row(Weights weights, int t, int i) const {
  MixingRow row;
  mixing_row(weights, t, i, row);
  return row;
}

void Topology::mixing_row(Weights weights, int t, int i, MixingRow& row) const {
  if (spec_.kind == TopologyKind::base) {  // the schedule's own weights: they make the product exact
    if (weights == Weights::metropolis)
      throw ConfigError("--weights metropolis: --topology " + to_string(spec_) + " carries its own weights");
    base_.row(static_cast<int>(phase(t, i)), i, row);
    return;
  }
  if (weights == Weights::metropolis && directed())
    throw ConfigError("--weights metropolis: needs an undirected --topology (ring, torus, hypercube, "
                      "random-regular:K, complete, file:PATH)");
  const auto& in = in_neighbours(t, i);
  row.peers.clear();
  row.weights.clear();
  row.peers.reserve(in.size() + 1);
  row.weights.reserve(in.size() + 1);
  const auto self_at = std::lower_bound(in.begin(), in.end(), i) - in.begin();

  if (weights == Weights::uniform) {
    row.peers.assign(in.begin(), in.end());
    row.peers.insert(row.peers.begin() + self_at, i);
    row.weights.assign(row.peers.size(), 1.0 / static_cast<double>(row.peers.size()));
    return;
  }

  const auto d_i = in.size();
  double others = 0.0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    if (static_cast<std::ptrdiff_t>(k) == self_at) {
      row.peers.push_back(i);
      row.weights.push_back(0.0);  // filled in below
    }
    const auto d_j = undirected_degree(t, in[k]);
    const double w = 1.0 / (1.0 + static_cast<double>(std::max(d_i, d_j)));
    row.peers.push_back(in[k]);
    row.weights.push_back(w);
    others += w;
  }
  if (self_at == static_cast<std::ptrdiff_t>(in.size())) {
    row.peers.push_back(i);
    row.weights.push_back(0.0);
  }
  row.weights[static_cast<std::size_t>(self_at)] = 1.0 - others;
}

bool check_large_graph(const TopologySpec& spec, int n) {
  constexpr double kLargeEntries = 1 << 22;
  const bool stored = spec.kind == TopologyKind::ring || spec.kind == TopologyKind::torus ||
                      spec.kind == TopologyKind::hypercube || spec.kind == TopologyKind::random_regular;
  if (!stored || n < 1 || graph_footprint(spec, n).entries <= kLargeEntries) return false;
  if (spec.kind == TopologyKind::hypercube && !is_power_of_two(n)) hypercube_graph(n);  // throws its refusal
  if (spec.kind == TopologyKind::random_regular) graph::check_random_regular(spec, n);
  return true;
}

}  // namespace avb
