// What the graph protocols (gossip, pushsum, sgp-paper, pairwise) share: the
// trial's graph, the neighbour exchange, the wire form of encodings and the sum in
// peer order. Every peer computes its row, its partners and who needs its value
// from the topology and the failure function, which every peer evaluates for every
// other; values then travel by Isend/Irecv between neighbours (SMPI has no
// neighbour collectives). Sums run over peers in ascending order, so every engine
// adds the same terms in the same order.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "codecs/compress.hpp"
#include "codecs/wire.hpp"
#include "protocols/protocol.hpp"

namespace avb {

inline constexpr int kGossipTag = 131;

// The topology of a trial: random graphs depend on the trial's seed.
class TrialTopology {
 public:
  TrialTopology(TopologySpec spec, int n) : spec_(std::move(spec)), n_(n) {}
  // `stop`: the sequential engine's round stop flag (see Topology).
  const Topology& get(std::uint64_t seed, const std::atomic<bool>* stop = nullptr) {
    if (!topology_ || seed_ != seed) {
      topology_.reset();
      topology_.emplace(spec_, n_, seed, stop);
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

// One encoding per sender and round, sent to every neighbour alike: the dither is
// keyed by (seed, round, sender, message 0), never by timing or rank count.
inline EncodeContext graph_context(std::uint64_t seed, int t, int sender) {
  return {seed, static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(sender), 0};
}

// sum = own + the received vectors, added in ascending peer order with `own` at
// this peer's place, so that every engine adds the same terms in the same order. `from` is ascending; slot k of `received` came from from[k].
inline void sum_in_peer_order(int me, std::span<const double> own, const std::vector<int>& from,
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

}  // namespace avb
