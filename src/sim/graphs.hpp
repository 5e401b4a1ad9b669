// How Topology builds its graphs (internal to src/sim): adjacency lists, the
// random regular generator and the edge-list reader. Errors are ConfigError
// ("--topology ...").
#pragma once

#include <cstdint>
#include <iosfwd>
#include <vector>

#include "sim/topology.hpp"

namespace avb::graph {

using AdjacencyLists = std::vector<std::vector<int>>;

void sort_unique(std::vector<int>& v);

// The smallest peer that breadth-first search from peer 0 does not reach, or -1
// when the graph is connected.
int first_unreachable(const AdjacencyLists& adj);

// A connected simple K-regular graph on n peers (K = spec.degree), drawn from the
// topology stream of `seed`.
AdjacencyLists random_regular(const TopologySpec& spec, int n, std::uint64_t seed,
                              const std::atomic<bool>* stop = nullptr);
// Refuses (ConfigError) the (K, n) for which no connected simple K-regular graph exists.
void check_random_regular(const TopologySpec& spec, int n);

// An undirected, connected edge list on n peers: from `in`, or from spec.path.
AdjacencyLists read_edge_list(std::istream& in, const TopologySpec& spec, int n);
AdjacencyLists read_edge_list(const TopologySpec& spec, int n);

// base:K (sim/base_graph.cpp): every round's mixing rows; after the last round
// every peer holds the exact mean, for any n >= 1. `stop` is polled once a round
// (StopRequested).
BaseSchedule base_schedule(int n, int k, const std::atomic<bool>* stop = nullptr);

}  // namespace avb::graph
