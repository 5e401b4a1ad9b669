// Communication graphs for gossip-style protocols, and their mixing weights.
//
// A Topology answers, for round t and peer i, whose values i mixes in (its
// in-neighbours) and who mixes in i's value (its out-neighbours). Undirected graphs
// have the two equal; the exponential graphs are directed (i sends to i + 2^j), and
// the one-peer exponential graph also changes with t, as does the epidemic graph
// (each peer sends to S peers drawn afresh each round). Every peer builds the same
// graph from (spec, N, seed), so no peer ever asks another who its neighbours are.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"

namespace avb {

enum class TopologyKind {
  ring,            // i - 1, i + 1
  torus,           // 2D torus a x b, a the largest divisor of N with a <= sqrt(N)
  hypercube,       // i xor 2^j; N a power of two
  exp,             // static exponential graph, directed: i -> i + 2^j (mod N), j = 0 .. ceil(log2 N) - 1
  one_peer_exp,    // time-varying, directed: in round t, i -> i + 2^((t-1) mod ceil(log2 N))
  epidemic,        // time-varying, directed: in round t, i -> S peers drawn uniformly from the others (Epidemic Learning)
  base,            // time-varying, weighted: the Base-(K+1) schedule, exact average after its rounds (sim/base_graph.cpp)
  random_regular,  // random K-regular simple graph drawn from the topology stream
  complete,        // everyone
  file,            // undirected edge list read from a file
};

struct TopologySpec {
  TopologyKind kind = TopologyKind::ring;
  int degree = 0;    // random_regular: K; epidemic: S; base: K
  std::string path;  // file
};

// What a graph of this spec costs, known before it is built (the run's resource
// estimate, run/estimate.hpp): upper bounds of its messages per round and the
// neighbours of the busiest peer, and the lists and entries Topology stores.
struct GraphFootprint {
  double sends = 0;       // directed edges used in one round: the sum of out-degrees
  double max_degree = 0;  // the most peers one peer sends to or hears from in a round
  double lists = 0;       // stored neighbour lists, all peers together
  double entries = 0;     // stored neighbour entries, all peers together
  double build_work = 0;  // steps to build it (random-regular retries its pairings)
  double period = 1;      // rounds before a time-varying graph repeats (one-peer-exp: ceil(log2 N))
  // Directed edges used at least once in `rounds` rounds: what a protocol keeping
  // state per receiver (choco's last sends) holds by the end.
  double distinct_sends(double rounds) const { return sends * std::min(std::max(1.0, rounds), period); }
};
GraphFootprint graph_footprint(const TopologySpec& spec, int n);

// Checks a large stored graph's preconditions without building it (a hypercube's
// power of two, a random-regular graph's K and N) and returns true; returns false
// for any other graph, which is cheap enough to check by building it. Building a
// graph of billions of entries while the options are read would cost minutes and
// gigabytes on every rank before the run's memory estimate could refuse it.
bool check_large_graph(const TopologySpec& spec, int n);

// "ring", "torus", "hypercube", "exp", "one-peer-exp", "random-regular:K",
// "epidemic:S", "base:K", "complete", "file:PATH". Throws ConfigError starting "--topology: ...".
TopologySpec parse_topology(std::string_view text);
// "{ring, torus, ...}": what parse_topology accepts, for messages and --help.
std::string_view topology_names();
std::string to_string(const TopologySpec& spec);  // parses back to the same spec

enum class Weights {
  uniform,     // 1/(in-degree + 1) for self and each in-neighbour
  metropolis,  // Metropolis-Hastings: 1/(1 + max(d_i, d_j)) per edge, the rest on self (undirected only)
};
inline constexpr EnumNames<Weights, 2> kWeightsNames{
    "--weights", {{{Weights::uniform, "uniform"}, {Weights::metropolis, "metropolis"}}}};
Weights parse_weights(std::string_view name);  // throws ConfigError (--weights)
std::string_view to_string(Weights weights);

// One row of a mixing matrix: x_i <- sum_k weight[k] * x[peer[k]]. Peers ascending,
// i itself included.
struct MixingRow {
  std::vector<int> peers;
  std::vector<double> weights;
};

// base:K's rows, all rounds in three flat arrays (a row per peer would cost two
// allocations each: gigabytes at a million peers).
struct BaseSchedule {
  int n = 1;
  int rounds = 0;
  std::vector<std::size_t> ends;  // [round * n + peer]: where its row ends in peers and weights
  std::vector<int> peers;
  std::vector<double> weights;
  void add(const std::vector<MixingRow>& round);  // the next round, one row per peer
  void row(int round, int i, MixingRow& out) const;  // round from 0
};

class Topology {
 public:
  // Throws ConfigError ("--topology ...") when the graph cannot be built for n
  // peers: hypercube with n not a power of two, random-regular with K >= n or n*K
  // odd, a malformed or disconnected file (with the line number), etc.
  // `stop`: polled while a random graph is drawn (StopRequested, core/error.hpp).
  Topology(const TopologySpec& spec, int n, std::uint64_t seed, const std::atomic<bool>* stop = nullptr);
  // A file:PATH topology read from `edge_list` instead of PATH, which then only
  // names it in errors (the fuzzer feeds bytes). Same checks, same messages.
  Topology(const TopologySpec& spec, int n, std::istream& edge_list);

  int peers() const { return n_; }
  const TopologySpec& spec() const { return spec_; }
  bool directed() const;
  bool time_varying() const;  // one_peer_exp, epidemic, base
  // Rounds after which the graph repeats (1 for static graphs; epidemic: never,
  // and period() is 1, its rounds being drawn, not indexed).
  int period() const;

  // Round t >= 1; ascending, without i itself. Throws std::out_of_range for t < 1
  // or i outside [0, peers()). Returned by value: the complete graph is not
  // stored (N^2 entries per peer would be 4 GB for 1024 simulated peers in one
  // process), its lists are made on demand.
  std::vector<int> in_neighbours(int t, int i) const;
  std::vector<int> out_neighbours(int t, int i) const;

  // Undirected edges (i < j) of round t, sorted; for directed graphs, the edges
  // with their direction forgotten.
  std::vector<std::pair<int, int>> edges(int t) const;

  // Row i of the mixing matrix of round t. Throws ConfigError for metropolis on a
  // directed graph.
  MixingRow mixing_row(Weights weights, int t, int i) const;
  // The same into `row`, reusing its storage (a per-peer loop allocates nothing).
  void mixing_row(Weights weights, int t, int i, MixingRow& row) const;

 private:
  // How many neighbours peer j has in round t (undirected kinds), without listing them.
  std::size_t undirected_degree(int t, int j) const;
  // Index into in_/out_ for round t; checks t and i.
  std::size_t phase(int t, int i) const;
  // Drops self-loops, sorts each peer's list, stores it as the one phase.
  void store_undirected(std::vector<std::vector<int>> adj);
  // epidemic (sim/epidemic_graph.cpp): the S peers i sends to in round t,
  // ascending; every peer's senders in round t.
  std::vector<int> epidemic_targets(int t, int i) const;
  const std::vector<std::vector<int>>& epidemic_senders(int t) const;

  TopologySpec spec_;
  int n_;
  std::uint64_t seed_ = 0;
  const std::atomic<bool>* stop_ = nullptr;  // polled while a round's epidemic graph is drawn
  // epidemic: every peer's in-neighbours of round epidemic_round_, made at the
  // first question about that round (a peer's senders are known only once every
  // peer's draws are). Each trial and rank has its own Topology.
  mutable int epidemic_round_ = 0;
  mutable std::vector<std::vector<int>> epidemic_in_;
  // Undirected graphs: one list per peer, in in_[0]. The complete and the
  // exponential graphs are computed, not stored.
  std::vector<std::vector<std::vector<int>>> in_;  // [phase][peer]
  // base: every round's rows, with the schedule's weights.
  BaseSchedule base_;
};

}  // namespace avb
