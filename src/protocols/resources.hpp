// What a protocol needs, stated before a run starts: each catalog row names a
// function that gives its memory, its bytes per round and its busiest round's
// messages as functions of the run's size (run/estimate.hpp adds the runner's own
// share, multiplies by rounds, trials and threads, and refuses what cannot fit,
// overflow a counter or leave the simulated-time bound).
//
// The figures are upper bounds where a refusal depends on them (bytes and time:
// no round of a run may exceed them) and estimates, calibrated on this project's
// data structures and checked against measured peak memory by a test, for memory.
#pragma once

#include <cstddef>

#include "protocols/time_model.hpp"

namespace avb {

struct ProtocolOptions;

// The size of a run, as the estimate sees it.
struct ResourceQuery {
  int peers = 1;
  std::size_t dim = 1;        // coordinates computed per peer
  std::size_t model_dim = 1;  // coordinates charged per message (--model-dim)
};

// Per-peer memory is given as dim-double arrays ("vectors") and plain bytes; the
// graph a --topology protocol keeps is added by the estimate (graph_footprint).
struct ProtocolResources {
  // Sequential form: arrays of dim doubles per peer beside the population, plain
  // bytes per peer (groups, weights, caches), and bytes per edge of its graph
  // beyond the graph itself (cached mixing rows, estimates of neighbours).
  double population_vectors = 0;
  double population_bytes = 0;
  double population_edge_bytes = 0;
  double population_edge_vectors = 0;  // dim-double arrays per edge (choco's neighbour estimates)
  // MPI form, per peer: dim-double arrays beside x, and how many messages it has
  // in flight at once (each staged in a buffer of model_dim doubles when
  // --model-dim pads: core/padding.hpp).
  double peer_vectors = 2;
  double messages_in_flight = 2;
  // One round, at most: the bytes all peers send together, and its messages
  // (the simulated-time bound: round_seconds of these).
  double round_bytes = 0;
  MessagePattern pattern;
  // Seconds a peer spends idle in every round beside its messages (swarm's
  // Poisson clock runs for one unit of time).
  double idle_seconds = 0;
  // Wall-clock work of one sequential round per peer, in units of one touched
  // double (a mix and a store): the estimate of wall time, nothing else.
  double work_per_peer = 0;
};

using ResourceFunction = ProtocolResources(const ProtocolOptions& options, const ResourceQuery& query);

// Bytes of a message of `length` doubles under the options' quantizer, its
// lattice fallback (the values sent again at full precision) included.
double message_bytes(const ProtocolOptions& options, double length);

// The shares the protocols have in common. Groups of at most `largest_group`
// members averaging by the options' collective (allreduce, random-groups, moshpit);
// a graph protocol sending `message` bytes along every edge of its --topology.
ProtocolResources group_resources(const ProtocolOptions& options, const ResourceQuery& query, int largest_group);
ProtocolResources graph_resources(const ProtocolOptions& options, const ResourceQuery& query, double message);

}  // namespace avb
