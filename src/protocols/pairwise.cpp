// Protocol "pairwise": randomized pairwise gossip, a random matching on a
// --topology each round (docs/protocols.md). Like gossip it may send Q(x)
// (--quantizer, "Quantized gossip and pairwise").
#include "protocols/gossip.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "protocols/graph_exchange.hpp"
#include "protocols/population_codec.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "protocols/resources.hpp"

namespace avb {

namespace {
constexpr int kPairTag = 121;
constexpr int kPairVerdictTag = 122;  // quantized pairwise, lattice fallback
constexpr int kPairResendTag = 123;
}  // namespace

void average_with(Comm& comm, int partner, std::span<double> x, std::vector<double>& scratch) {
  scratch.resize(x.size());
  comm.sendrecv<double>(x, partner, std::span<double>(scratch), partner, kPairTag);
  // a + b == b + a in IEEE arithmetic, so both partners get the same bits.
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = (x[k] + scratch[k]) / 2.0;
}

std::vector<int> random_matching(const Topology& topology, std::uint64_t seed, const FailureModel& failures, int t,
                                 const std::vector<std::pair<int, int>>* edges) {
  const int n = topology.peers();
  std::vector<int> partner(static_cast<std::size_t>(n), -1);
  const Stream stream(seed, StreamId::matching);
  if (topology.spec().kind == TopologyKind::complete) {
    // Alive peers by (32-bit key, peer), eight keys per Philox block; pair them up.
    std::vector<std::uint64_t> order;
    for (int p : failures.alive_peers(t)) {
      const auto u = static_cast<std::uint64_t>(p);
      const std::uint64_t word = stream.block(static_cast<std::uint64_t>(t), u / 8, 0).w[(u % 8) / 2];
      const auto key = static_cast<std::uint32_t>(u % 2 == 0 ? word : word >> 32);
      order.push_back((static_cast<std::uint64_t>(key) << 32) | static_cast<std::uint32_t>(p));
    }
    std::sort(order.begin(), order.end());
    for (std::size_t k = 0; k + 1 < order.size(); k += 2) {
      const int a = static_cast<int>(order[k] & 0xffffffffu), b = static_cast<int>(order[k + 1] & 0xffffffffu);
      partner[static_cast<std::size_t>(a)] = b;
      partner[static_cast<std::size_t>(b)] = a;
    }
    return partner;
  }
  const std::vector<std::pair<int, int>> own_edges = edges ? std::vector<std::pair<int, int>>{} : topology.edges(t);
  const auto& list = edges ? *edges : own_edges;
  // (32-bit key << 32 | edge index): ordered by key, ties by index; eight edges
  // share a Philox block, as the shuffle keys do.
  std::vector<char> up(static_cast<std::size_t>(n), 0);  // one pass over the failure draws
  for (int p : failures.alive_peers(t)) up[static_cast<std::size_t>(p)] = 1;
  std::vector<std::uint64_t> order;
  std::uint64_t cached = ~std::uint64_t{0};
  Stream::Block block{};
  for (std::size_t e = 0; e < list.size(); ++e) {
    if (!up[static_cast<std::size_t>(list[e].first)] || !up[static_cast<std::size_t>(list[e].second)]) continue;
    if (e / 8 != cached) {
      cached = e / 8;
      block = stream.block(static_cast<std::uint64_t>(t), cached, 0);
    }
    const std::uint64_t word = block.w[(e % 8) / 2];
    const auto key = static_cast<std::uint32_t>(e % 2 == 0 ? word : word >> 32);
    order.push_back((static_cast<std::uint64_t>(key) << 32) | e);
  }
  std::sort(order.begin(), order.end());
  for (std::uint64_t entry : order) {
    const auto [a, b] = list[entry & 0xffffffffu];
    if (partner[static_cast<std::size_t>(a)] < 0 && partner[static_cast<std::size_t>(b)] < 0) {
      partner[static_cast<std::size_t>(a)] = b;
      partner[static_cast<std::size_t>(b)] = a;
    }
  }
  return partner;
}

namespace {

class PairwiseProtocol final : public Protocol {
 public:
  PairwiseProtocol(const ProtocolOptions& o, int n) : topology_(*o.topology, n), quantizer_(o.quantizer) {}

  void step(std::span<double> x, Round& round) override {
    const Topology& g = topology_.get(round.seed);
    const int me = round.world.rank();
    if (!round.failures.alive(round.t, me)) return;
    // A static graph's edge list is computed once per trial.
    if (g.time_varying() || edges_seed_ != round.seed || edges_.empty()) {
      edges_ = g.spec().kind == TopologyKind::complete ? std::vector<std::pair<int, int>>{} : g.edges(round.t);
      edges_seed_ = round.seed;
    }
    const int partner =
        random_matching(g, round.seed, round.failures, round.t, &edges_)[static_cast<std::size_t>(me)];
    if (partner < 0) return;
    if (me < partner) round.counters.groups = 1;
    if (quantizer_.spec().kind == QuantizerKind::none) {
      average_with(round.world, partner, x, scratch_);
      return;
    }
    // Each side sends Q(x) and averages its own exact x with what it decodes, so
    // the two partners generally end with different bits.
    quantizer_.encode(x, graph_context(round.seed, round.t, me), encoded_);
    incoming_.resize(encoded_.size());
    round.world.sendrecv<std::uint8_t>(wire(encoded_), partner, std::span<std::uint8_t>(incoming_), partner,
                                       kPairTag);
    scratch_.resize(x.size());
    const bool decoded = quantizer_.decode(unwire(incoming_), x, scratch_).ok;
    if (!decoded) round.counters.decode_failures += 1;
    if (quantizer_.spec().kind == QuantizerKind::lattice) {
      // The fallback: each side tells the other whether it decoded (one byte) and
      // sends x itself when the other did not.
      const std::uint8_t mine = decoded ? 0 : 1;
      std::uint8_t theirs = 0;
      round.world.sendrecv<std::uint8_t>(std::span<const std::uint8_t>(&mine, 1), partner,
                                         std::span<std::uint8_t>(&theirs, 1), partner, kPairVerdictTag);
      std::vector<MPI_Request> requests;
      if (!decoded) round.world.irecv<double>(std::span<double>(scratch_), partner, kPairResendTag, requests);
      if (theirs) round.world.isend<double>(std::span<const double>(x.data(), x.size()), partner, kPairResendTag,
                                            requests);
      round.world.wait_all(requests, "pairwise: value sent again at full precision");
    } else if (!decoded) {
      // Other kinds fail only on a non-finite vector: this side keeps its value
      // (the pair still counts in groups; the partner, who may have decoded,
      // averages as usual).
      return;
    }
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = (x[k] + scratch_[k]) / 2.0;
  }

 private:
  TrialTopology topology_;
  Quantizer quantizer_;
  std::vector<double> scratch_;
  std::vector<std::uint8_t> incoming_;
  std::vector<std::byte> encoded_;
  std::vector<std::pair<int, int>> edges_;
  std::uint64_t edges_seed_ = 0;
};


// The sequential form: round t's matching, each side averaging its exact value
// with its partner's as received.
class PairwisePopulation final : public SequentialProtocol {
 public:
  PairwisePopulation(const ProtocolOptions& o, int n)
      : topology_(*o.topology, n), received_(o.quantizer), quantized_(o.quantizer.kind != QuantizerKind::none) {}

  RoundEffect step(Population& x, const PopulationRound& round) override {
    const Topology& g = topology_.get(round.seed, round.stop);
    if (g.time_varying() || edges_seed_ != round.seed || edges_.empty()) {
      edges_ = g.spec().kind == TopologyKind::complete ? std::vector<std::pair<int, int>>{} : g.edges(round.t);
      edges_seed_ = round.seed;
    }
    const std::vector<int> partner = random_matching(g, round.seed, round.failures, round.t, &edges_);
    const auto d = static_cast<std::size_t>(x.dim);
    const std::size_t message = received_.quantizer().encoded_bytes(x.model_dim);
    old_ = x.values;
    value_.resize(d);
    RoundEffect effect;
    for (int i = 0; i < x.n; ++i) {
      round.poll(i);
      const int j = partner[static_cast<std::size_t>(i)];
      if (j < 0) continue;
      if (i < j) ++effect.groups;
      effect.bytes += message;
      round.send(j, i, static_cast<double>(message));
      const std::span<const double> mine(old_.data() + static_cast<std::size_t>(i) * d, d);
      const std::span<const double> theirs(old_.data() + static_cast<std::size_t>(j) * d, d);
      std::span<const double> v = theirs;
      if (quantized_) {
        const bool decoded = received_.receive(round.seed, round.t, j, theirs, mine, value_, effect);
        // Undecodable and no fallback (not lattice): i keeps its value.
        if (!decoded && received_.quantizer().spec().kind != QuantizerKind::lattice) continue;
        v = value_;
      }
      for (std::size_t c = 0; c < d; ++c) x.peer(i)[c] = (mine[c] + v[c]) / 2.0;
    }
    return effect;
  }

 private:
  TrialTopology topology_;
  ReceivedValue received_;
  bool quantized_;
  std::vector<double> old_, value_;
  std::vector<std::pair<int, int>> edges_;
  std::uint64_t edges_seed_ = 0;
};

}  // namespace

// A matching: every peer sends at most one message; the sequential form also keeps
// the graph's edge list to draw the matching from.
ProtocolResources resources_pairwise(const ProtocolOptions& o, const ResourceQuery& q) {
  const double message = message_bytes(o, static_cast<double>(q.model_dim));
  ProtocolResources r = graph_resources(o, q, message);
  r.round_bytes = q.peers * message;
  r.pattern = {1, message, message};
  r.messages_in_flight = 4;
  r.population_bytes = 96;
  r.population_edge_bytes = o.topology->kind == TopologyKind::complete ? 0 : 16;  // the edge list it draws from
  // Each round draws a key per edge (per alive peer on the complete graph), sorts
  // them all and matches greedily: about 2 + 1.5 log2(keys) touched doubles a key
  // (exp on 3.7 million peers, 82 million edges: 115 ns a key a round, the edge
  // list's building included).
  const double keys = o.topology->kind == TopologyKind::complete ? q.peers : graph_footprint(*o.topology, q.peers).sends / 2;
  const double sort = keys / q.peers * (2 + 1.5 * std::log2(std::max(2.0, keys)));
  r.work_per_peer = 2.0 * (static_cast<double>(q.dim) + 4) + 32 + sort;
  return r;
}

extern constinit const ProtocolForms kPairwiseForms = forms_of<PairwiseProtocol, PairwisePopulation>(resources_pairwise);

}  // namespace avb
