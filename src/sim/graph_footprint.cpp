// graph_footprint (sim/topology.hpp): what a graph costs, known before it is built.
#include <cmath>
#include <filesystem>
#include <limits>

#include "sim/topology.hpp"

namespace avb {

namespace {

// base:K: stored, every round's rows, at most K + 1 entries each.
void base_footprint(const TopologySpec& spec, double peers, GraphFootprint& f) {
  const double k = std::max(1, spec.degree);
  double digits = 1;
  for (double place = k + 1; place <= peers; place *= k + 1) ++digits;
  f.sends = peers * std::min(k, peers - 1);
  f.max_degree = std::min(k, peers - 1);
  f.period = 2 * digits + 1;  // the groups' own rounds, then the merges and the largest blocks' spread
  f.lists = 0;  // three flat arrays: a row's end (8 bytes) and its entries (12 each)
  f.entries = peers * f.period * (std::min(k + 1, peers) + 1);
  f.build_work = f.entries;
}

}  // namespace

GraphFootprint graph_footprint(const TopologySpec& spec, int n) {
  const double peers = n;
  double log2n = 0;
  while (std::ldexp(1.0, static_cast<int>(log2n)) < peers) ++log2n;
  GraphFootprint f;
  auto undirected = [&](double degree) {
    f.sends = peers * degree;
    f.max_degree = degree;
    f.lists = peers;  // stored once
    f.entries = peers * degree;
    f.build_work = peers * degree;
  };
  switch (spec.kind) {
    case TopologyKind::ring: undirected(std::min(2.0, peers - 1)); break;
    case TopologyKind::torus: undirected(std::min(4.0, peers - 1)); break;
    case TopologyKind::hypercube: undirected(log2n); break;
    case TopologyKind::random_regular:
      undirected(spec.degree);
      f.build_work = 16 * peers * spec.degree;  // pairings drawn and checked, with retries
      break;
    case TopologyKind::exp:  // directed, computed
      f.sends = peers * log2n;
      f.max_degree = log2n;
      break;
    case TopologyKind::one_peer_exp:  // one out-neighbour a round, computed
      f.sends = peers > 1 ? peers : 0;
      f.max_degree = peers > 1 ? 1 : 0;
      f.period = std::max(1.0, log2n);
      break;
    case TopologyKind::complete:  // computed, never stored
      f.sends = peers * (peers - 1);
      f.max_degree = peers - 1;
      break;
    case TopologyKind::epidemic:  // drawn each round; every peer lists the round's senders of all
      f.sends = peers * std::min<double>(spec.degree, std::max(0.0, peers - 1));
      f.max_degree = std::max(0.0, peers - 1);  // S out, and any number in
      f.lists = peers;
      f.entries = f.sends;
      f.build_work = f.sends;
      f.period = std::numeric_limits<double>::infinity();
      break;
    case TopologyKind::base: base_footprint(spec, peers, f); break;
    case TopologyKind::file: {
      // Unknown until read: every two bytes of the file ("a b\n" is the
      // shortest line) at most one entry, and any peer may be a hub.
      std::error_code ec;
      const auto size = std::filesystem::file_size(spec.path, ec);
      const double entries = ec ? 0.0 : std::min(static_cast<double>(size) / 2, peers * (peers - 1));
      f.sends = entries;
      f.max_degree = peers - 1;
      f.lists = peers;
      f.entries = entries;
      f.build_work = entries;
      break;
    }
  }
  return f;
}

}  // namespace avb
