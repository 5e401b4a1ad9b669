// SwarmSGD's averaging (Nadiradze et al. 2021): after its local steps a peer picks
// a neighbour uniformly at random and averages with it, asynchronously, with
// two-sided MPI only (SMPI 3.32 aborts on passive-target RMA). Internal to
// src/protocols: others reach it through make_swarm.
//
// Wire protocol, on the trial's communicator:
//   initiator i -> partner j   kRequest: i's round t and attempt (8 bytes), then blocking:
//                                        Q(X_i), i's pre-local-step model; non-blocking: nothing
//   partner j  -> initiator i  kReply:   one status byte, then Q(model of j)
// Lattice fallback (status bytes kResend, kExact; header bit kExactRequest): a
// blocking request j cannot decode is answered kResend, and i sends it again with
// X_i itself (8 bytes a value); a reply i could not decode is sent as the model
// itself (kExact), which j knows beforehand because i decodes near the very value
// j took for X_i. Non-blocking: i asks again with kExactRequest and no payload.
// A peer serves requests whenever it is inside the protocol: while it waits for its
// own reply, in progress() between local steps, and in settle(). Requests are
// received only once MPI_Iprobe has seen them and answered with MPI_Isend, so no
// peer ever blocks on another: any pattern of simultaneous requests (i -> j while
// j -> i, chains, stars) completes.
//
// Blocking interactions are written as increments, which is what keeps the mean
// exact under concurrency: j serves i by delta_j = (R_i - Y_j)/2 and i, on the
// reply, applies delta_i = (Y_j - R_i)/2 with the same two values (R_i, Y_j: X_i
// and X_j as the other side received them, exact without a quantizer), so
// delta_i = -delta_j bit for bit, whatever else either peer served in between. Each
// adds its increment both to its current model x (local progress re-applied) and to
// its pre-local-step model X.
//
// settle(): a peer whose own interaction is over enters a barrier and keeps serving
// until the barrier completes. The barrier completes only when every peer's
// interaction is over, so no request is left in flight; the replies this peer sent
// are then completed too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "core/rng.hpp"
#include "protocols/protocol.hpp"

namespace avb::swarm {

inline constexpr int kRequestTag = 0x5701;
inline constexpr int kReplyTag = 0x5702;
inline constexpr int kBarrierTag = 0x5710;  // + round of the dissemination barrier (< 32)
inline constexpr std::byte kDecoded{1};
inline constexpr std::byte kRefused{0};  // a quantizer other than lattice failed (a non-finite model): nobody moves
inline constexpr std::byte kBusy{2};     // the partner is waiting on an interaction of its own
inline constexpr std::byte kResend{3};   // lattice: the request did not decode; send the model itself
inline constexpr std::byte kExact{4};    // lattice: the reply carries the model itself (8 bytes a value)
// Bit 31 of the request's second header word: the payload is the model itself
// (blocking: the resend after kResend; non-blocking: asks for a kExact reply).
inline constexpr std::uint32_t kExactRequest = 0x80000000u;
inline constexpr int kMaxAttempts = 16;  // partners drawn before an initiator gives up on an interaction
// The Poisson clock's unit of time in simulated seconds (one round), and the slice
// in which an idle peer serves. An interaction on the default platform takes about
// 1.3 ms (two messages over two 50 us host links and the 500 us backbone), so at
// 64 peers (64 ticks a second, 16 ms apart on average) interactions rarely overlap.
inline constexpr double kSecondsPerUnit = 1.0;
inline constexpr double kIdleSlice = 1e-3;

// The draws both forms share (the MPI form here, the sequential one in
// swarm_sequential.cpp), so that they meet the same partners at the same ticks.
// The gap before tick `tick` of peer `me`'s rate-1 Poisson clock in round t, in
// units of the clock: exponential, keyed by (round, peer, tick).
inline double tick_gap(std::uint64_t seed, int t, int me, int tick) {
  return -std::log(Stream(seed, StreamId::clock)
                       .uniform_open0(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(me),
                                      static_cast<std::uint64_t>(tick)));
}
// Which of `count` candidates (the alive out-neighbours, ascending) draw `draw`
// of peer `me` in round t picks: the partner stream keyed by (round, peer, draw),
// draw = tick * kMaxAttempts + attempt.
inline std::size_t partner_index(std::uint64_t seed, int t, int me, int draw, std::size_t count) {
  const std::uint64_t bits = Stream(seed, StreamId::partner)
                                 .bits(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(me),
                                       static_cast<std::uint64_t>(draw));
  return static_cast<std::size_t>(bits % count);
}

// The dither key of an interaction's request: (initiator's round, initiator,
// 2 * attempt), whatever kExactRequest says; the reply's is the next message.
inline EncodeContext request_context(std::uint64_t seed, const std::uint32_t header[2], int initiator) {
  const std::uint32_t attempt = header[1] & ~kExactRequest;
  return {seed, header[0], static_cast<std::uint64_t>(initiator), 2 * static_cast<std::uint64_t>(attempt)};
}

// The initiator's side is in swarm.cpp, the partner's (serving requests, the
// settle barrier) in swarm_serve.cpp.
class SwarmProtocol final : public Protocol {
 public:
  SwarmProtocol(const ProtocolOptions& o, Comm& comm)
      : mode_(o.swarm.mode),
        clock_(o.swarm.clock),
        quantizer_(o.quantizer),
        topology_spec_(*o.topology),
        comm_(comm) {}

  ~SwarmProtocol() override;
  SwarmProtocol(const SwarmProtocol&) = delete;
  SwarmProtocol& operator=(const SwarmProtocol&) = delete;

  void begin_trial(std::span<const double> x, std::uint64_t seed) override;
  void step(std::span<double> x, Round& round) override;
  void on_join(std::span<const double> x) override;
  void progress(std::span<double> x) override;
  void settle(std::span<double> x, GroupCounters& counters) override;

 private:
  struct Deferred {
    int initiator;
    std::vector<std::byte> payload;
  };
  struct PendingReply {
    std::vector<std::byte> bytes;
    std::vector<MPI_Request> request;
  };

  // The model this peer offers: blocking, its pre-local-step model; non-blocking,
  // the last one it published.
  const std::vector<double>& reference() const { return mode_ == SwarmMode::blocking ? pre_local_ : published_; }

  // The initiator.
  void initiate(std::span<double> x, Round& round, int tick);
  void idle_serving(double units, std::span<double> x);
  int choose_partner(const Round& round, int attempt);
  std::byte interact(std::span<double> x, Round& round, int partner, int attempt);
  std::byte exchange(std::span<double> x, int partner, std::vector<std::byte> request = {});
  std::vector<std::byte> exact_request(const std::uint32_t header[2], std::span<const double> model);
  bool decode_reply(std::byte status, std::span<const double> near);

  // The partner.
  void listen();
  void wait_serving(MPI_Request& other, std::span<double> x, const char* what);
  void serve(std::span<double> x);
  void handle(const MPI_Status& status, std::span<double> x);
  void reap_replies();
  void answer(int initiator, std::span<double> x);
  void reply(PendingReply& r, int initiator, std::byte status);

  static std::uint32_t header_word(const std::vector<std::byte>& message, int k) {
    std::uint32_t word;
    std::memcpy(&word, message.data() + k * sizeof word, sizeof word);
    return word;
  }

  // The largest payload of a request or reply: the quantized model or the model itself.
  std::size_t payload_capacity(std::size_t d) const {
    return std::max(quantizer_.encoded_bytes(d), exact_.encoded_bytes(d));
  }

  static std::span<std::uint8_t> as_bytes(std::vector<std::byte>& v) {
    return {reinterpret_cast<std::uint8_t*>(v.data()), v.size()};
  }
  static std::span<const std::uint8_t> as_const_bytes(const std::vector<std::byte>& v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
  }

  SwarmMode mode_;
  SwarmClock clock_;
  Quantizer quantizer_;
  Quantizer exact_{QuantizerSpec{}};  // the model itself, for the lattice fallback
  TopologySpec topology_spec_;
  Comm& comm_;
  std::optional<Topology> topology_;
  bool started_ = false;
  std::uint64_t seed_ = 0;
  int served_failures_ = 0;  // requests this peer could not decode, not yet reported
  std::vector<double> pre_local_, published_, sent_, decoded_;
  std::vector<double> own_view_, seen_;  // blocking: R_i as the initiator and as the partner computes it
  std::vector<std::byte> request_, reply_, incoming_, encoded_, inbox_;
  MPI_Request listen_ = MPI_REQUEST_NULL;
  std::vector<int> alive_;
  std::deque<PendingReply> replies_;
  std::deque<Deferred> deferred_;
  bool waiting_ = false;  // blocking: this peer's request is out; its model must not change
  // --model-dim: the bytes a message carrying a model gains (Comm pads it), 0 without.
  std::size_t model_extra_ = 0;
  // A message's charged size: `bytes`, plus model_extra_ if it carries more than its header.
  std::size_t charged(std::size_t bytes, std::size_t header) const {
    return bytes > header ? bytes + model_extra_ : bytes;
  }
};

}  // namespace avb::swarm
