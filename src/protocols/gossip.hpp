// Graph protocols: synchronous gossip (x <- Wx), push-sum, the Moshpit authors'
// simulated "SGP", and randomized pairwise gossip (docs/protocols.md).
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "protocols/protocol.hpp"

namespace avb {

AliveWeights parse_alive_weights(std::string_view name);  // throws ConfigError (--alive-weights)
std::string_view to_string(AliveWeights weights);

// Row i of round t's gossip matrix among the alive peers (docs/protocols.md):
// the topology's row as is when every peer in it is alive; otherwise renormalised
// over the alive entries, or Metropolis weights of the alive subgraph. Empty for a
// failed peer. Shared by both forms so that they sum the same terms.
MixingRow alive_mixing_row(const Topology& topology, Weights weights, AliveWeights alive, const FailureModel& failures,
                           int t, int i);

// Round t's random matching of alive peers on the topology: partner[i], or -1.
// Complete graph: alive peers in a random order (matching stream, as shuffle_key),
// paired first with second, third with fourth, ... Other graphs: the edges between
// alive peers, ordered by (32-bit key, e), the key of edge e (its index in
// topology.edges(t)) packed eight to a Philox block (t, e / 8, 0) of the matching
// stream, and taken greedily when both ends are free. `edges`, when given, must be
// topology.edges(t) (callers cache it for static graphs).
std::vector<int> random_matching(const Topology& topology, std::uint64_t seed, const FailureModel& failures, int t,
                                 const std::vector<std::pair<int, int>>* edges = nullptr);

// The Moshpit authors' "SGP" graphs (docs/protocols.md): H = floor(log2(n - 1)) of
// them, round t using graph t mod H. Graph h is a multiset of edges (i, j), "i pulls
// from j": every self loop, plus for k = 2^h and 2^(h+1) the ones of the n x n
// identity rolled by k in flattened order. Throws ConfigError when n < 3 (H = 0).
int sgp_paper_period(int n);

// Whom peer i pulls from in round t, with multiplicity, ascending (i among them).
void sgp_paper_sources(int n, int t, int i, std::vector<int>& out);

// Who pulls from peer j in round t, with multiplicity, ascending (j among them).
void sgp_paper_sinks(int n, int t, int j, std::vector<int>& out);

// Averages x with `partner` (a rank of comm): both end with the same bits.
void average_with(Comm& comm, int partner, std::span<double> x, std::vector<double>& scratch);

}  // namespace avb
