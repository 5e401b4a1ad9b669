// Graph protocols. Every peer computes its row, its partners and who needs its
// value from the topology and the failure function, which every peer evaluates for
// every other; values then travel by Isend/Irecv between neighbours (SMPI has no
// neighbour collectives). Sums run over peers in ascending order, so the oracle and
// every engine add the same terms in the same order.
//
// gossip and pairwise may send Q(x) instead of x (--quantizer): one encoding per
// peer and round, decoded by each receiver near its own model; a peer always uses
// its own exact x for its own term (docs/protocols.md, "Quantized gossip and
// pairwise").
#include "protocols/gossip.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace avb {

AliveWeights parse_alive_weights(std::string_view name) {
  if (name == "renormalize") return AliveWeights::renormalize;
  if (name == "metropolis") return AliveWeights::metropolis;
  throw ConfigError("--alive-weights: '" + std::string(name) + "' is not one of {renormalize, metropolis}");
}

std::string_view to_string(AliveWeights weights) {
  return weights == AliveWeights::renormalize ? "renormalize" : "metropolis";
}

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

constexpr int kGossipTag = 131;
constexpr int kVerdictTag = 132;  // lattice fallback: "your message did not decode"
constexpr int kResendTag = 133;   // lattice fallback: the value itself

// The topology of a trial: random graphs depend on the trial's seed.
class TrialTopology {
 public:
  TrialTopology(TopologySpec spec, int n) : spec_(std::move(spec)), n_(n) {}
  const Topology& get(std::uint64_t seed) {
    if (!topology_ || seed_ != seed) {
      topology_.emplace(spec_, n_, seed);
      seed_ = seed;
    }
    return *topology_;
  }

 private:
  TopologySpec spec_;
  int n_;
  std::optional<Topology> topology_;
  std::uint64_t seed_ = 0;
};

// Receives one message from each of `from` and sends `payload` to each of `to`:
// value vectors (T = double) or quantized encodings (T = std::uint8_t), all of one
// size in a round.
template <class T>
class NeighbourExchange {
 public:
  // Returns the received messages, slot k (payload.size() entries) for from[k].
  const std::vector<T>& run(Comm& comm, std::span<const T> payload, const std::vector<int>& to,
                            const std::vector<int>& from) {
    const std::size_t d = payload.size();
    incoming_.resize(from.size() * d);
    for (std::size_t k = 0; k < from.size(); ++k)
      comm.irecv<T>(std::span<T>(incoming_.data() + k * d, d), from[k], kGossipTag, requests_);
    for (int j : to) comm.isend<T>(payload, j, kGossipTag, requests_);
    comm.wait_all(requests_, "gossip: neighbours' values");
    return incoming_;
  }

 private:
  std::vector<T> incoming_;
  std::vector<MPI_Request> requests_;
};

// Encodings travel as MPI bytes; Comm counts their size, which is what the trace's
// bytes_sent reports for quantized protocols.
std::span<const std::uint8_t> wire(const std::vector<std::byte>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
}
std::span<const std::byte> unwire(std::span<const std::uint8_t> v) {
  return {reinterpret_cast<const std::byte*>(v.data()), v.size()};
}

// One encoding per sender and round, sent to every neighbour alike: the dither is
// keyed by (seed, round, sender, message 0), never by timing or rank count.
EncodeContext graph_context(std::uint64_t seed, int t, int sender) {
  return {seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(sender), 0};
}

// sum = own + the received vectors, added in ascending peer order with `own` at
// this peer's place, so that every engine and the oracle add the same terms in
// the same order. `from` is ascending; slot k of `received` came from from[k].
void sum_in_peer_order(int me, std::span<const double> own, const std::vector<int>& from,
                       const std::vector<double>& received, std::vector<double>& sum) {
  const std::size_t d = own.size();
  sum.assign(d, 0.0);
  auto add = [&](const double* v) {
    for (std::size_t c = 0; c < d; ++c) sum[c] += v[c];
  };
  bool own_added = false;
  for (std::size_t k = 0; k < from.size(); ++k) {
    if (!own_added && from[k] > me) {
      add(own.data());
      own_added = true;
    }
    add(received.data() + k * d);
  }
  if (!own_added) add(own.data());
}

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
  // exchanged, so every engine and the oracle make the same choices.
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

// Push-sum: the peer's mass (x, w) is split evenly between itself and its alive
// out-neighbours and sent as one message of d + 1 values; the estimate is z = x / w.
// A share meant for a failed peer stays with its sender, so sum(x) and sum(w) are
// conserved exactly (up to rounding) whatever fails.
class PushSumProtocol final : public Protocol {
 public:
  PushSumProtocol(const ProtocolOptions& o, int n) : topology_(*o.topology, n) {}

  void step(std::span<double> z, Round& round) override {
    const Topology& g = topology_.get(round.seed);
    const int me = round.world.rank(), t = round.t;
    const std::size_t d = z.size();
    if (mass_.empty() || seed_ != round.seed) {  // a new trial: x = z, w = 1
      seed_ = round.seed;
      mass_.assign(z.begin(), z.end());
      mass_.push_back(1.0);
    } else {
      // What the caller did to z since the last round (SGD steps) goes into the
      // numerator as is: the sum of numerators then moves by the sum of the
      // steps, unweighted, as in SGP. Pure averaging leaves z alone: adding 0.
      for (std::size_t c = 0; c < d; ++c) mass_[c] += z[c] - last_[c];
    }
    if (!round.failures.alive(t, me)) {
      publish(z);
      return;
    }
    to_.clear();
    for (int j : g.out_neighbours(t, me))
      if (round.failures.alive(t, j)) to_.push_back(j);
    from_.clear();
    for (int j : g.in_neighbours(t, me)) {
      if (round.failures.alive(t, j)) from_.push_back(j);
      else if (j != me) round.counters.waited_on_failure = 1;  // noticed after the timeout
    }
    const double share = 1.0 / static_cast<double>(to_.size() + 1);
    for (double& v : mass_) v *= share;
    const auto& in = exchange_.run(round.world, std::span<const double>(mass_), to_, from_);
    sum_in_peer_order(me, mass_, from_, in, sum_);
    mass_ = sum_;
    publish(z);
  }

 private:
  // z = x / w, remembered to see the caller's changes at the next round.
  void publish(std::span<double> z) {
    const std::size_t d = z.size();
    for (std::size_t c = 0; c < d; ++c) z[c] = mass_[c] / mass_[d];
    last_.assign(z.begin(), z.end());
  }

  TrialTopology topology_;
  NeighbourExchange<double> exchange_;
  std::vector<double> mass_, sum_;  // x then w
  std::vector<double> last_;        // z as the last round left it
  std::uint64_t seed_ = 0;
  std::vector<int> from_, to_;
};

// The Moshpit authors' simulated "SGP": in round t (k = (t-1) mod ceil(log2 N)),
// each alive peer replaces its value by the plain mean of itself and its alive
// exponential neighbours i + 2^k and i - 2^k. Rows are normalised, columns are not:
// the mean drifts, and there are no push-sum weights to correct it.
class SgpPaperProtocol final : public Protocol {
 public:
  explicit SgpPaperProtocol(int n) : n_(n) {}

  void step(std::span<double> x, Round& round) override {
    const int me = round.world.rank(), t = round.t;
    if (n_ < 2 || !round.failures.alive(t, me)) return;
    neighbours_ = sgp_paper_neighbours(n_, t, me);
    alive_.clear();
    for (int j : neighbours_) {
      if (round.failures.alive(t, j)) alive_.push_back(j);
      else round.counters.waited_on_failure = 1;  // noticed after the timeout
    }
    // The relation is symmetric: whoever i pulls from also pulls from i.
    const auto& in = exchange_.run(round.world, std::span<const double>(x.data(), x.size()), alive_, alive_);
    sum_in_peer_order(me, x, alive_, in, sum_);
    const double count = static_cast<double>(alive_.size() + 1);
    for (std::size_t c = 0; c < x.size(); ++c) x[c] = sum_[c] / count;
  }

 private:
  int n_;
  NeighbourExchange<double> exchange_;
  std::vector<int> neighbours_, alive_;
  std::vector<double> sum_;
};

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

}  // namespace

std::vector<int> sgp_paper_neighbours(int n, int t, int i) {
  std::vector<int> out;
  if (n < 2) return out;
  int period = 0;
  while ((1 << period) < n) ++period;
  const int step = 1 << ((t - 1) % period);
  for (int j : {(i + step) % n, ((i - step) % n + n) % n})
    if (j != i && std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);
  std::sort(out.begin(), out.end());
  return out;
}

std::unique_ptr<Protocol> make_gossip(const ProtocolOptions& o, Comm& world) {
  return std::make_unique<GossipProtocol>(o, world.size());
}
std::unique_ptr<Protocol> make_pushsum(const ProtocolOptions& o, Comm& world) {
  return std::make_unique<PushSumProtocol>(o, world.size());
}
std::unique_ptr<Protocol> make_sgp_paper(const ProtocolOptions&, Comm& world) {
  return std::make_unique<SgpPaperProtocol>(world.size());
}
std::unique_ptr<Protocol> make_pairwise(const ProtocolOptions& o, Comm& world) {
  return std::make_unique<PairwiseProtocol>(o, world.size());
}

}  // namespace avb
