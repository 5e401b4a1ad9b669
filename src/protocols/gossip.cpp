// Protocol "gossip": synchronous x <- Wx on a --topology (docs/protocols.md).
//
// It may send Q(x) instead of x (--quantizer): one encoding per peer and round,
// decoded by each receiver near its own model; a peer always uses its own exact x
// for its own term (docs/protocols.md, "Quantized gossip and pairwise").
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

AliveWeights parse_alive_weights(std::string_view name) { return kAliveWeightsNames.parse(name); }

std::string_view to_string(AliveWeights weights) { return kAliveWeightsNames.name(weights); }

MixingRow alive_mixing_row(const Topology& topology, Weights weights, AliveWeights alive, const FailureModel& failures,
                           int t, int i) {
  MixingRow row;
  if (!failures.alive(t, i)) return row;
  if (alive == AliveWeights::metropolis) {
    // Metropolis-Hastings on the alive subgraph: 1/(1 + max(d_i, d_j)) per alive
    // edge, with the degrees counted among alive peers; the rest stays on i.
    auto alive_degree = [&](int p) {
      int d = 0;
      for (int q : topology.in_neighbours(t, p)) d += failures.alive(t, q) ? 1 : 0;
      return d;
    };
    const int di = alive_degree(i);
    std::vector<std::pair<int, double>> entries;
    double others = 0.0;
    for (int j : topology.in_neighbours(t, i)) {
      if (!failures.alive(t, j)) continue;
      const double w = 1.0 / (1.0 + std::max(di, alive_degree(j)));
      entries.emplace_back(j, w);
      others += w;  // in ascending order of j
    }
    entries.emplace_back(i, 1.0 - others);
    std::sort(entries.begin(), entries.end());
    for (const auto& [p, w] : entries) {
      row.peers.push_back(p);
      row.weights.push_back(w);
    }
    return row;
  }
  row = topology.mixing_row(weights, t, i);
  bool everyone = true;
  for (int p : row.peers) everyone = everyone && failures.alive(t, p);
  if (everyone) return row;
  MixingRow kept;
  double sum = 0.0;
  for (std::size_t k = 0; k < row.peers.size(); ++k)
    if (failures.alive(t, row.peers[k])) {
      kept.peers.push_back(row.peers[k]);
      kept.weights.push_back(row.weights[k]);
      sum += row.weights[k];
    }
  for (double& w : kept.weights) w /= sum;
  return kept;
}

namespace {

constexpr int kVerdictTag = 132;  // lattice fallback: "your message did not decode"
constexpr int kResendTag = 133;   // lattice fallback: the value itself

class GossipProtocol final : public Protocol {
 public:
  GossipProtocol(const ProtocolOptions& o, int n)
      : topology_(*o.topology, n), weights_(o.weights), alive_weights_(o.alive_weights), quantizer_(o.quantizer) {}

  void step(std::span<double> x, Round& round) override {
    const Topology& g = topology_.get(round.seed);
    const int me = round.world.rank(), t = round.t;
    if (!round.failures.alive(t, me)) return;
    for (int j : g.in_neighbours(t, me))  // a silent neighbour is noticed after the timeout
      if (j != me && !round.failures.alive(t, j)) round.counters.waited_on_failure = 1;
    const MixingRow row = alive_mixing_row(g, weights_, alive_weights_, round.failures, t, me);
    from_.clear();
    for (int p : row.peers)
      if (p != me) from_.push_back(p);
    to_.clear();
    for (int j : g.out_neighbours(t, me))
      if (round.failures.alive(t, j)) to_.push_back(j);
    const std::size_t d = x.size();
    const double* in = nullptr;  // slot k (d values) holds the value of from_[k]
    if (quantizer_.spec().kind == QuantizerKind::none) {
      // The doubles themselves, as before quantizers existed (bit-identical traces).
      in = exchange_.run(round.world, std::span<const double>(x.data(), d), to_, from_).data();
    } else {
      quantizer_.encode(x, graph_context(round.seed, t, me), encoded_);
      const auto& bytes = byte_exchange_.run(round.world, wire(encoded_), to_, from_);
      const std::size_t size = encoded_.size();
      received_.resize(from_.size() * d);
      failed_.assign(from_.size(), 0);
      for (std::size_t k = 0; k < from_.size(); ++k) {
        const std::span<double> slot(received_.data() + k * d, d);
        // Decoded near this peer's own model (lattice). On a failure: lattice asks
        // the sender for x at full precision below; the other kinds fail only on a
        // sender's non-finite vector, and that neighbour's weight stays on this
        // peer's own value (docs/protocols.md).
        if (!quantizer_.decode(unwire({bytes.data() + k * size, size}), x, slot).ok) {
          std::copy(x.begin(), x.end(), slot.begin());
          round.counters.decode_failures += 1;
          failed_[k] = 1;
        }
      }
      if (quantizer_.spec().kind == QuantizerKind::lattice) resend_failed(round.world, x);
      in = received_.data();
    }
    mixed_.assign(d, 0.0);
    for (std::size_t k = 0, slot = 0; k < row.peers.size(); ++k) {
      const double* v = row.peers[k] == me ? x.data() : in + (slot++) * d;
      for (std::size_t c = 0; c < d; ++c) mixed_[c] += row.weights[k] * v[c];
    }
    std::copy(mixed_.begin(), mixed_.end(), x.begin());
  }

 private:
  // The lattice fallback: every receiver answers each sender with one byte (1: your
  // message did not decode), and each sender sends x itself to those that said 1,
  // which then replace their slot with it. Everything is decided by the bytes
  // exchanged, so every engine makes the same choices.
  void resend_failed(Comm& comm, std::span<const double> x) {
    const std::size_t d = x.size();
    verdicts_.resize(to_.size());
    for (std::size_t k = 0; k < from_.size(); ++k)
      comm.isend<std::uint8_t>(std::span<const std::uint8_t>(&failed_[k], 1), from_[k], kVerdictTag, requests_);
    for (std::size_t k = 0; k < to_.size(); ++k)
      comm.irecv<std::uint8_t>(std::span<std::uint8_t>(&verdicts_[k], 1), to_[k], kVerdictTag, requests_);
    comm.wait_all(requests_, "gossip: decode verdicts");
    for (std::size_t k = 0; k < from_.size(); ++k)
      if (failed_[k])
        comm.irecv<double>(std::span<double>(received_.data() + k * d, d), from_[k], kResendTag, requests_);
    for (std::size_t k = 0; k < to_.size(); ++k)
      if (verdicts_[k]) comm.isend<double>(x, to_[k], kResendTag, requests_);
    comm.wait_all(requests_, "gossip: values sent again at full precision");
  }

  TrialTopology topology_;
  Weights weights_;
  AliveWeights alive_weights_;
  Quantizer quantizer_;
  NeighbourExchange<double> exchange_;
  NeighbourExchange<std::uint8_t> byte_exchange_;
  std::vector<int> from_, to_;
  std::vector<double> mixed_, received_;
  std::vector<std::byte> encoded_;
  std::vector<std::uint8_t> failed_, verdicts_;  // slot k: from_[k]'s message failed; to_[k] asks for x
  std::vector<MPI_Request> requests_;
};


// The sequential form: every alive peer's row applied to the old values.
class GossipPopulation final : public SequentialProtocol {
 public:
  GossipPopulation(const ProtocolOptions& o, int n)
      : topology_(*o.topology, n), weights_(o.weights), alive_weights_(o.alive_weights), received_(o.quantizer),
        quantized_(o.quantizer.kind != QuantizerKind::none) {}

  RoundEffect step(Population& x, const PopulationRound& round) override {
    const Topology& g = topology_.get(round.seed, round.stop);
    const int t = round.t;
    const auto d = static_cast<std::size_t>(x.dim);
    const std::size_t message = received_.quantizer().encoded_bytes(x.model_dim);
    old_ = x.values;
    auto old = [&](int j) { return std::span<const double>(old_.data() + static_cast<std::size_t>(j) * d, d); };
    value_.resize(d);
    RoundEffect effect;
    cache(g, round.seed);
    MixingRow changed;
    for (int i = 0; i < x.n; ++i) {
      round.poll(i);
      if (!round.alive[static_cast<std::size_t>(i)]) continue;
      const MixingRow* cached = cached_row(i, round.alive);
      if (cached == nullptr) changed = alive_mixing_row(g, weights_, alive_weights_, round.failures, t, i);
      const MixingRow& row = cached != nullptr ? *cached : changed;
      if (row.peers.empty()) continue;
      mixed_.assign(d, 0.0);
      for (std::size_t k = 0; k < row.peers.size(); ++k) {
        const int j = row.peers[k];
        std::span<const double> v = old(j);
        if (quantized_ && j != i) {  // a neighbour's value as received; the own term exact
          received_.receive(round.seed, t, j, old(j), old(i), value_, effect);
          v = value_;
        }
        for (std::size_t c = 0; c < d; ++c) mixed_[c] += row.weights[k] * v[c];
      }
      std::copy(mixed_.begin(), mixed_.end(), x.peer(i).begin());
      std::size_t sent = 0;
      const std::vector<int>& outs = rows_.empty() ? (outs_scratch_ = g.out_neighbours(t, i)) : outs_[static_cast<std::size_t>(i)];
      for (int j : outs)
        if (round.alive[static_cast<std::size_t>(j)]) {
          sent += message;
          round.send(i, j, static_cast<double>(message));
        }
      effect.bytes += sent;
    }
    wait_on_silent_sources(round, x.n, [&](int i) { return g.in_neighbours(t, i); });
    return effect;
  }

 private:
  // A static graph's rows and out-lists, once per trial, when they fit in memory:
  // a row whose peers are all alive is used as is (alive_mixing_row's rule).
  void cache(const Topology& g, std::uint64_t seed) {
    if (cached_ && cached_seed_ == seed) return;
    rows_.clear();
    outs_.clear();
    cached_ = true;
    cached_seed_ = seed;
    if (g.time_varying() || alive_weights_ != AliveWeights::renormalize) return;
    std::size_t entries = 0;
    for (int i = 0; i < g.peers() && entries <= kMaxCachedEntries; ++i) {
      rows_.push_back(g.mixing_row(weights_, 1, i));
      outs_.push_back(g.out_neighbours(1, i));
      entries += rows_.back().peers.size() + outs_.back().size();
    }
    if (entries > kMaxCachedEntries) {
      rows_.clear();
      outs_.clear();
    }
  }

  const MixingRow* cached_row(int i, std::span<const std::uint8_t> alive) const {
    if (rows_.empty()) return nullptr;
    const MixingRow& row = rows_[static_cast<std::size_t>(i)];
    for (int j : row.peers)
      if (!alive[static_cast<std::size_t>(j)]) return nullptr;
    return &row;
  }

  static constexpr std::size_t kMaxCachedEntries = std::size_t{1} << 24;
  TrialTopology topology_;
  Weights weights_;
  AliveWeights alive_weights_;
  ReceivedValue received_;
  bool quantized_;
  std::vector<double> old_, mixed_, value_;
  std::vector<MixingRow> rows_;
  std::vector<std::vector<int>> outs_;
  std::vector<int> outs_scratch_;
  bool cached_ = false;  // rows_ and outs_ are this trial's (empty: not cached)
  std::uint64_t cached_seed_ = 0;
};

}  // namespace

// Every edge carries x (or its code) each round. The sequential form keeps the old
// values and caches a static graph's mixing rows up to kMaxCachedEntries entries.
ProtocolResources resources_gossip(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r = graph_resources(o, q, message_bytes(o, static_cast<double>(q.model_dim)));
  const GraphFootprint f = graph_footprint(*o.topology, q.peers);
  const double cached = std::min(2 * f.sends + q.peers, static_cast<double>(std::size_t{1} << 24) + q.peers);
  r.population_bytes = 3 * 96 + 16 * cached / q.peers;
  return r;
}

extern constinit const ProtocolForms kGossipForms = forms_of<GossipProtocol, GossipPopulation>(resources_gossip);

}  // namespace avb
