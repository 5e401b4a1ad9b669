// Protocol "choco": CHOCO-Gossip (Koloskova, Stich and Jaggi, ICML 2019), gossip
// that sends only compressed differences (docs/protocols.md, "choco").
//
// Every peer i keeps a public copy x̂_i, which starts at 0, and a copy of the public
// copy of each neighbour it hears from. In a round, an alive peer sends
// q_i = Q(x_i - x̂_i) to its alive out-neighbours, adds q_i to x̂_i (the receivers
// add it to their copies), and then moves towards its alive neighbours' copies:
// x_i += gamma * sum_j w_ij (x̂_j - x̂_i). With symmetric weights the terms cancel
// in pairs, so the mean is kept whatever the quantizer and whatever fails.
//
// A receiver's copy is exact whenever it is used, with no message beyond q:
// - decoding uses the reference 0 for every kind, so every receiver decodes a
//   message as its sender does; when the sender's own decode fails (lattice
//   overflow, non-finite values), it adds the exact difference instead and sends
//   it at full precision after the encoding;
// - a receiver that missed one of a sender's updates (it was down, or not the
//   sender's neighbour that round) gets the sender's x̂ itself at full precision
//   the next time they meet. Both ends know when: the failure function says in
//   which rounds the sender updated and the receiver listened.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocols/protocol.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "protocols/resources.hpp"

namespace avb {
namespace {

constexpr int kChocoTag = 141;   // q_i encoded, or x̂_i itself to a receiver that is behind
constexpr int kExactTag = 142;   // q_i at full precision when its encoding does not decode

std::span<const std::uint8_t> bytes_of(std::span<const double> v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(double)};
}
std::span<std::uint8_t> bytes_of(std::span<double> v) {
  return {reinterpret_cast<std::uint8_t*>(v.data()), v.size() * sizeof(double)};
}

// What both forms keep of the options, and the trial's graph.
class ChocoSettings {
 protected:
  ChocoSettings(const ProtocolOptions& o, int n)
      : spec_(*o.topology), n_(n), weights_(o.weights), gamma_(o.choco.gamma), quantizer_(o.quantizer) {}

  TopologySpec spec_;
  int n_;
  Weights weights_;
  double gamma_;
  Quantizer quantizer_;
  std::optional<Topology> topology_;
  std::uint64_t seed_ = 0;  // the trial's, for the graph
};

class ChocoProtocol final : public Protocol, private ChocoSettings {
 public:
  ChocoProtocol(const ProtocolOptions& o, int n) : ChocoSettings(o, n) {}

  void begin_trial(std::span<const double> x, std::uint64_t seed) override { start(x.size(), seed); }

  void step(std::span<double> x, Round& round) override {
    if (!topology_ || seed_ != round.seed) start(x.size(), round.seed);
    const int me = round.world.rank(), t = round.t;
    if (!round.failures.alive(t, me)) return;
    const MixingRow row = topology_->mixing_row(weights_, t, me);
    from_.clear();
    for (int j : row.peers) {
      if (j == me) continue;
      if (round.failures.alive(t, j)) from_.push_back(j);
      else round.counters.waited_on_failure = 1;  // a silent neighbour is noticed after the timeout
    }
    to_.clear();
    for (int k : topology_->out_neighbours(t, me))
      if (round.failures.alive(t, k)) to_.push_back(k);
    const bool exact = compress(x, round);
    exchange(round, exact);
    last_update_ = t;
    mix(x, row, round.failures, t, me);
  }

 private:
  void start(std::size_t d, std::uint64_t seed) {
    seed_ = seed;
    topology_.emplace(spec_, n_, seed);
    public_.assign(d, 0.0);
    zeros_.assign(d, 0.0);
    copies_.clear();
    sent_.clear();
    last_update_ = 0;
  }

  // q = Q(x - x̂) as every receiver will decode it, added to x̂; false when the
  // encoding does not decode and q is the exact difference.
  bool compress(std::span<const double> x, Round& round) {
    const std::size_t d = x.size();
    diff_.resize(d);
    for (std::size_t c = 0; c < d; ++c) diff_[c] = x[c] - public_[c];
    const EncodeContext context{round.seed, static_cast<std::uint64_t>(round.t),
                                static_cast<std::uint64_t>(round.world.rank()), 0};
    quantizer_.encode(diff_, context, encoded_);
    q_.resize(d);
    const bool decodes = quantizer_.decode(encoded_, zeros_, q_).ok;
    if (!decodes) {
      q_ = diff_;
      round.counters.decode_failures += 1;
    }
    for (std::size_t c = 0; c < d; ++c) public_[c] += q_[c];
    return decodes;
  }

  // Whether `receiver` holds this peer's x̂ as it was before this round's update:
  // it heard from this peer in the last round this peer updated.
  bool receiver_current(int receiver) const {
    const auto it = sent_.find(receiver);
    return (it == sent_.end() ? 0 : it->second) == last_update_;
  }
  // The same, seen from the receiver: the last round `sender` updated before t
  // (0: none) is the last round this peer heard from it.
  bool copy_current(int sender, const FailureModel& failures, int t) const {
    int updated = 0;
    for (int s = t - 1; s >= 1 && updated == 0; --s)
      if (failures.alive(s, sender)) updated = s;
    const auto it = copies_.find(sender);
    return (it == copies_.end() ? 0 : it->second.heard) == updated;
  }

  void exchange(Round& round, bool decodes) {
    Comm& comm = round.world;
    const std::size_t d = public_.size();
    const std::size_t size = quantizer_.encoded_bytes(d);
    const std::span<const std::uint8_t> encoded(reinterpret_cast<const std::uint8_t*>(encoded_.data()), size);
    incoming_.resize(from_.size() * size);
    current_.assign(from_.size(), 0);
    for (std::size_t k = 0; k < from_.size(); ++k) {
      Copy& copy = copies_[from_[k]];
      if (copy.value.empty()) copy.value.assign(d, 0.0);
      current_[k] = copy_current(from_[k], round.failures, round.t) ? 1 : 0;
      if (current_[k]) comm.irecv<std::uint8_t>({incoming_.data() + k * size, size}, from_[k], kChocoTag, requests_);
      else comm.irecv<std::uint8_t>(bytes_of(std::span<double>(copy.value)), from_[k], kChocoTag, requests_);
      copy.heard = round.t;
    }
    for (int k : to_) {
      if (receiver_current(k)) comm.isend<std::uint8_t>(encoded, k, kChocoTag, requests_);
      else comm.isend<std::uint8_t>(bytes_of(std::span<const double>(public_)), k, kChocoTag, requests_);
    }
    comm.wait_all(requests_, "choco: neighbours' compressed differences");
    apply_differences(comm, decodes, size);
    for (int k : to_) sent_[k] = round.t;
  }

  // Adds each current sender's q to its copy; q comes again at full precision
  // when its encoding does not decode (sender and receiver both know).
  void apply_differences(Comm& comm, bool decodes, std::size_t size) {
    const std::size_t d = public_.size();
    received_.resize(from_.size() * d);
    failed_.assign(from_.size(), 0);
    for (std::size_t k = 0; k < from_.size(); ++k) {
      if (!current_[k]) continue;
      const std::span<double> q(received_.data() + k * d, d);
      const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(incoming_.data() + k * size), size);
      if (quantizer_.decode(in, zeros_, q).ok) continue;
      failed_[k] = 1;
      comm.irecv<std::uint8_t>(bytes_of(q), from_[k], kExactTag, requests_);
    }
    if (!decodes)
      for (int k : to_)
        if (receiver_current(k)) comm.isend<std::uint8_t>(bytes_of(std::span<const double>(q_)), k, kExactTag, requests_);
    comm.wait_all(requests_, "choco: differences sent again at full precision");
    for (std::size_t k = 0; k < from_.size(); ++k) {
      if (!current_[k]) continue;
      std::vector<double>& copy = copies_[from_[k]].value;
      const double* q = received_.data() + k * d;
      for (std::size_t c = 0; c < d; ++c) copy[c] += q[c];
    }
  }

  // x += gamma * sum over alive neighbours j, in the row's order, of w_ij (x̂_j - x̂_i).
  void mix(std::span<double> x, const MixingRow& row, const FailureModel& failures, int t, int me) {
    const std::size_t d = x.size();
    pull_.assign(d, 0.0);
    for (std::size_t k = 0; k < row.peers.size(); ++k) {
      const int j = row.peers[k];
      if (j == me || !failures.alive(t, j)) continue;
      const std::vector<double>& copy = copies_[j].value;
      for (std::size_t c = 0; c < d; ++c) pull_[c] += row.weights[k] * (copy[c] - public_[c]);
    }
    for (std::size_t c = 0; c < d; ++c) x[c] += gamma_ * pull_[c];
  }

  struct Copy {
    std::vector<double> value;  // the neighbour's x̂ as this peer knows it
    int heard = 0;              // the last round this peer received from it
  };

  std::vector<double> public_, zeros_, diff_, q_, received_, pull_;
  std::unordered_map<int, Copy> copies_;
  std::unordered_map<int, int> sent_;  // receiver -> the last round this peer sent to it
  int last_update_ = 0;                // the last round this peer updated x̂
  std::vector<int> from_, to_;
  std::vector<std::byte> encoded_;
  std::vector<std::uint8_t> incoming_, current_, failed_;
  std::vector<MPI_Request> requests_;
};


// The sequential form. A receiver's copy equals the sender's x̂ whenever it is
// used, so one x̂ per peer models them all; what differs is the traffic: the
// encoding (plus q at full precision when it does not decode) to a receiver that
// heard the sender's last update, x̂ itself at full precision to one that did not.
class ChocoPopulation final : public SequentialProtocol, private ChocoSettings {
 public:
  ChocoPopulation(const ProtocolOptions& o, int n) : ChocoSettings(o, n) {}

  void begin_trial(const Population& x, std::uint64_t seed) override {
    topology_.reset();  // drawn at the first round, where a stop can interrupt it
    seed_ = seed;
    public_.assign(x.values.size(), 0.0);
    updated_.assign(static_cast<std::size_t>(n_), 0);
    sent_.assign(static_cast<std::size_t>(n_), {});
  }

  RoundEffect step(Population& x, const PopulationRound& round) override {
    if (!topology_) topology_.emplace(spec_, n_, seed_, round.stop);
    RoundEffect effect;
    publish(x, round, effect);
    mix(x, round);
    return effect;
  }

 private:
  std::span<double> copy_of(int i, std::size_t d) { return {public_.data() + static_cast<std::size_t>(i) * d, d}; }

  // Every alive peer adds q_i = Q(x_i - x̂_i), decoded near 0 (the exact difference
  // when that fails), to x̂_i, and sends it.
  void publish(const Population& x, const PopulationRound& round, RoundEffect& effect) {
    const auto d = static_cast<std::size_t>(x.dim);
    const int t = round.t;
    diff_.resize(d);
    q_.resize(d);
    zeros_.assign(d, 0.0);
    for (int i = 0; i < n_; ++i) {
      round.poll(i);
      if (!round.alive[static_cast<std::size_t>(i)]) continue;
      const std::span<double> own = copy_of(i, d);
      for (std::size_t c = 0; c < d; ++c) diff_[c] = x.peer(i)[c] - own[c];
      quantizer_.encode(diff_, EncodeContext{round.seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i), 0},
                        bytes_);
      const bool decodes = quantizer_.decode(bytes_, zeros_, q_).ok;
      if (!decodes) {
        q_ = diff_;
        ++effect.decode_failures;
      }
      for (std::size_t c = 0; c < d; ++c) own[c] += q_[c];
      std::size_t sent = 0;
      for (int k : topology_->out_neighbours(t, i)) {
        if (!round.alive[static_cast<std::size_t>(k)]) continue;
        int& last = last_sent(i, k);
        const bool current = last == updated_[static_cast<std::size_t>(i)];
        const std::size_t message = current ? bytes_.size() + (decodes ? 0 : 8 * d) : 8 * d;
        sent += message;
        round.send(i, k, static_cast<double>(message));
        last = t;
      }
      updated_[static_cast<std::size_t>(i)] = t;
      effect.bytes += sent;
    }
  }

  // The last round `sender` sent to `receiver` (0: never), to be updated: a sorted
  // list per sender, 8 bytes a receiver (a hash map per sender cost 5x that, and a
  // time-varying graph's receivers accumulate over its period).
  int& last_sent(int sender, int receiver) {
    auto& list = sent_[static_cast<std::size_t>(sender)];
    auto it = std::lower_bound(list.begin(), list.end(), receiver,
                               [](const std::pair<int, int>& e, int r) { return e.first < r; });
    if (it == list.end() || it->first != receiver) it = list.insert(it, {receiver, 0});
    return it->second;
  }

  // x_i += gamma * sum over alive neighbours j of w_ij (x̂_j - x̂_i), new copies.
  void mix(Population& x, const PopulationRound& round) {
    const auto d = static_cast<std::size_t>(x.dim);
    pull_.resize(d);
    for (int i = 0; i < n_; ++i) {
      round.poll(i);
      if (!round.alive[static_cast<std::size_t>(i)]) continue;
      topology_->mixing_row(weights_, round.t, i, row_);
      const MixingRow& row = row_;
      std::fill(pull_.begin(), pull_.end(), 0.0);
      for (std::size_t k = 0; k < row.peers.size(); ++k) {
        const int j = row.peers[k];
        if (j != i && !round.alive[static_cast<std::size_t>(j)]) round.wait(i);  // noticed after the timeout
        if (j == i || !round.alive[static_cast<std::size_t>(j)]) continue;
        const std::span<const double> cj = copy_of(j, d), ci = copy_of(i, d);
        for (std::size_t c = 0; c < d; ++c) pull_[c] += row.weights[k] * (cj[c] - ci[c]);
      }
      for (std::size_t c = 0; c < d; ++c) x.peer(i)[c] += gamma_ * pull_[c];
    }
  }

  std::vector<double> public_, diff_, q_, zeros_, pull_;
  std::vector<int> updated_;                         // the last round each peer updated x̂
  std::vector<std::vector<std::pair<int, int>>> sent_;  // [sender]: (receiver, the last round it sent), by receiver
  std::vector<std::byte> bytes_;
  MixingRow row_;
};

}  // namespace

// Every edge carries a code each round; the sequential form keeps the public
// copies x-hat and, per edge, the round a sender last sent to a receiver.
ProtocolResources resources_choco(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r = graph_resources(o, q, message_bytes(o, static_cast<double>(q.model_dim)));
  r.population_vectors = 2;
  r.population_bytes = 128;
  r.population_edge_bytes = 16;  // a (receiver, round) pair, in a vector up to twice its size
  // A mixing row built and a map looked up per edge and round.
  r.work_per_peer += 3 * graph_footprint(*o.topology, q.peers).sends / q.peers;
  r.peer_vectors = 4;
  return r;
}

extern constinit const ProtocolForms kChocoForms = forms_of<ChocoProtocol, ChocoPopulation>(resources_choco);

}  // namespace avb
