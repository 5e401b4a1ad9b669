// SwarmSGD's averaging (Nadiradze et al. 2021): after its local steps a peer picks
// a neighbour uniformly at random and averages with it, asynchronously, with
// two-sided MPI only (SMPI 3.32 aborts on passive-target RMA).
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
#include "protocols/protocol.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sim/compute.hpp"

namespace avb {

SwarmMode parse_swarm_mode(std::string_view name) {
  if (name == "blocking") return SwarmMode::blocking;
  if (name == "non-blocking") return SwarmMode::non_blocking;
  throw ConfigError("--mode: '" + std::string(name) + "' is not one of {blocking, non-blocking}");
}

std::string_view to_string(SwarmMode mode) { return mode == SwarmMode::blocking ? "blocking" : "non-blocking"; }

SwarmClock parse_swarm_clock(std::string_view name) {
  if (name == "round") return SwarmClock::round;
  if (name == "poisson") return SwarmClock::poisson;
  throw ConfigError("--clock: '" + std::string(name) + "' is not one of {round, poisson}");
}

std::string_view to_string(SwarmClock clock) { return clock == SwarmClock::round ? "round" : "poisson"; }

namespace {

constexpr int kRequestTag = 0x5701;
constexpr int kReplyTag = 0x5702;
constexpr int kBarrierTag = 0x5710;  // + round of the dissemination barrier (< 32)
constexpr std::byte kDecoded{1};
constexpr std::byte kRefused{0};  // a quantizer other than lattice failed (a non-finite model): nobody moves
constexpr std::byte kBusy{2};     // the partner is waiting on an interaction of its own
constexpr std::byte kResend{3};   // lattice: the request did not decode; send the model itself
constexpr std::byte kExact{4};    // lattice: the reply carries the model itself (8 bytes a value)
// Bit 31 of the request's second header word: the payload is the model itself
// (blocking: the resend after kResend; non-blocking: asks for a kExact reply).
constexpr std::uint32_t kExactRequest = 0x80000000u;
constexpr int kMaxAttempts = 16;  // partners drawn before an initiator gives up on an interaction
// The Poisson clock's unit of time in simulated seconds (one round), and the slice
// in which an idle peer serves. An interaction on the default platform takes about
// 1.3 ms (two messages over two 50 us host links and the 500 us backbone), so at
// 64 peers (64 ticks a second, 16 ms apart on average) interactions rarely overlap.
constexpr double kSecondsPerUnit = 1.0;
constexpr double kIdleSlice = 1e-3;

class SwarmProtocol final : public Protocol {
 public:
  SwarmProtocol(const ProtocolOptions& o, Comm& comm)
      : mode_(o.swarm_mode),
        clock_(o.swarm_clock),
        quantizer_(o.quantizer),
        topology_spec_(*o.topology),
        comm_(comm) {}

  ~SwarmProtocol() override {
    // After the last settle() nothing is in flight but the listening receive.
    // Errors are ignored: a destructor may run while an MPI error unwinds.
    if (listen_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&listen_);
      MPI_Wait(&listen_, MPI_STATUS_IGNORE);
    }
    for (auto& r : replies_) MPI_Waitall(static_cast<int>(r.request.size()), r.request.data(), MPI_STATUSES_IGNORE);
  }
  SwarmProtocol(const SwarmProtocol&) = delete;
  SwarmProtocol& operator=(const SwarmProtocol&) = delete;

  void begin_trial(std::span<const double> x, std::uint64_t seed) override {
    started_ = true;
    seed_ = seed;
    topology_.emplace(topology_spec_, comm_.size(), seed);
    pre_local_.assign(x.begin(), x.end());
    published_.assign(x.begin(), x.end());
    replies_.clear();
    inbox_.resize(2 * sizeof(std::uint32_t) + payload_capacity(x.size()));
    listen();
  }

  void step(std::span<double> x, Round& round) override {
    if (!started_ || seed_ != round.seed) throw Error("swarm: step() before begin_trial() of this trial");
    const int me = comm_.rank(), t = round.t;
    round.counters.decode_failures += std::exchange(served_failures_, 0);
    if (!round.failures.alive(t, me)) return;
    if (clock_ == SwarmClock::round) {
      initiate(x, round, 0);
      return;
    }
    // The ticks of a rate-1 Poisson clock in this round's unit of time: exponential
    // gaps, keyed by (round, peer, tick). Under SMPI the peer idles (serving) until
    // each tick, so interactions happen in the order of the clocks; on a real MPI
    // there is no simulated time, and the ticks only say how many there are.
    const Stream clock(round.seed, StreamId::clock);
    double now = 0.0;
    for (int tick = 0;; ++tick) {
      const double gap = -std::log(clock.uniform_open0(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(me),
                                                       static_cast<std::uint64_t>(tick)));
      if (now + gap >= 1.0) {
        idle_serving(1.0 - now, x);
        break;
      }
      idle_serving(gap, x);
      now += gap;
      initiate(x, round, tick);
    }
  }

  void on_join(std::span<const double> x) override {
    if (!started_) return;
    pre_local_.assign(x.begin(), x.end());
    published_.assign(x.begin(), x.end());
  }

  void progress(std::span<double> x) override {
    if (!started_) return;
    published_.assign(x.begin(), x.end());
    serve(x);
  }

  void settle(std::span<double> x, GroupCounters& counters) override {
    if (!started_) return;
    // A dissemination barrier (round k: token to me + 2^k, from me - 2^k), in
    // point-to-point messages so that waiting on it can serve requests with
    // MPI_Waitany. (SMPI 3.32 deadlocks in MPI_Waitany over an MPI_Ibarrier
    // request, and polling MPI_Test would charge simulated time per poll.)
    const int n = comm_.size(), me = comm_.rank();
    std::vector<MPI_Request> tokens;
    for (int k = 0, step = 1; step < n; ++k, step *= 2) {
      std::vector<MPI_Request> in;
      comm_.irecv(std::span<std::uint8_t>(), (me - step + n) % n, kBarrierTag + k, in);
      comm_.isend(std::span<const std::uint8_t>(), (me + step) % n, kBarrierTag + k, tokens);
      wait_serving(in[0], x, "swarm: settle barrier");
    }
    comm_.wait_all(tokens, "swarm: settle barrier");
    for (auto& r : replies_) comm_.wait_all(r.request, "swarm: replies sent");
    replies_.clear();
    counters.decode_failures += std::exchange(served_failures_, 0);
  }

 private:
  // One interaction initiated by this peer (the `tick`-th of its round), drawing
  // another partner while the drawn one is busy.
  void initiate(std::span<double> x, Round& round, int tick) {
    bool done = false, tried = false;
    for (int attempt = 0; attempt < kMaxAttempts && !done; ++attempt) {
      const int draw = tick * kMaxAttempts + attempt;
      const int partner = choose_partner(round, draw);
      if (partner < 0) break;
      tried = true;
      const std::byte status = interact(x, round, partner, draw);
      if (status == kBusy) continue;  // the partner was in an interaction of its own: draw again
      done = true;
    }
    if (tried) {
      round.counters.groups += 1;
      if (!done) round.counters.failed_groups += 1;
    }
    // Requests deferred while this peer waited, in arrival order.
    while (!deferred_.empty()) {
      Deferred r = std::move(deferred_.front());
      deferred_.pop_front();
      incoming_ = std::move(r.payload);
      answer(r.initiator, x);
    }
  }

  // Lets `units` of the Poisson clock's time pass (one unit = kSecondsPerUnit of
  // simulated time) while serving partners. SMPI has no timed wait, so the peer
  // idles in slices and serves between them: a request waits at most one slice.
  void idle_serving(double units, std::span<double> x) {
    serve(x);
    if (!time_is_simulated()) return;
    for (double left = units * kSecondsPerUnit; left > 0; left -= kIdleSlice) {
      idle_seconds(std::min(left, kIdleSlice));
      serve(x);
    }
  }

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

  // Uniform over the neighbours alive in round t, from the partner stream (draw
  // `draw`: the partner stream is keyed by (round, peer, draw), draw = tick * kMaxAttempts + attempt).
  int choose_partner(const Round& round, int attempt) {
    const int me = comm_.rank(), t = round.t;
    alive_.clear();
    for (int j : topology_->out_neighbours(t, me))
      if (j != me && round.failures.alive(t, j)) alive_.push_back(j);
    if (alive_.empty()) return -1;
    const std::uint64_t bits = Stream(round.seed, StreamId::partner)
                                   .bits(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(me),
                                         static_cast<std::uint64_t>(attempt));
    return alive_[static_cast<std::size_t>(bits % alive_.size())];
  }

  // One request to `partner` and its reply; serves others while waiting. Returns
  // the reply's status. With the lattice quantizer a message that does not decode
  // is sent again as the model itself (docs/protocols.md, swarm), so every
  // interaction a partner accepts completes.
  std::byte interact(std::span<double> x, Round& round, int partner, int attempt) {
    const int me = comm_.rank();
    sent_.assign(reference().begin(), reference().end());
    const std::uint32_t header[2] = {static_cast<std::uint32_t>(round.t), static_cast<std::uint32_t>(attempt)};
    request_.resize(sizeof header);
    std::memcpy(request_.data(), header, sizeof header);
    if (mode_ == SwarmMode::blocking) {
      encoded_.clear();
      quantizer_.encode(sent_, request_context(round.seed, header, me), encoded_);
      request_.insert(request_.end(), encoded_.begin(), encoded_.end());
    }
    std::byte status = exchange(x, partner);
    if (status == kResend) {  // blocking: the partner could not decode Q(X_i)
      status = exchange(x, partner, exact_request(header, sent_));
      if (status == kResend) throw Error("swarm: the partner refused a request sent at full precision");
    } else if (mode_ == SwarmMode::non_blocking && status == kDecoded && !decode_reply(status, sent_)) {
      round.counters.decode_failures += 1;
      if (quantizer_.spec().kind != QuantizerKind::lattice) return kRefused;
      status = exchange(x, partner, exact_request(header, {}));
    }
    if (status != kDecoded && status != kExact) return status;
    if (mode_ == SwarmMode::blocking) {
      // What the partner took for X_i: the model itself after a resend, else the
      // decoding of Q(X_i) (the partner decoded it, and i's own model is as near
      // to X_i as any reference can be). The partner checked that its reply
      // decodes near that same value, and applied (R_i - Y_j)/2; i applies
      // (Y_j - R_i)/2, the same two values: delta_i = -delta_j bit for bit.
      own_view_.resize(x.size());
      if (header_word(request_, 1) & kExactRequest)
        own_view_ = sent_;
      else if (!quantizer_.decode(std::span<const std::byte>(request_).subspan(sizeof header), sent_, own_view_).ok)
        throw Error("swarm: a request the partner decoded does not decode near its sender");
      if (!decode_reply(status, own_view_)) throw Error("swarm: a reply its sender checked did not decode");
      // Nothing changed this peer's model while it waited (it deferred or refused
      // every request), so the interaction is atomic.
      for (std::size_t k = 0; k < x.size(); ++k) x[k] += (decoded_[k] - own_view_[k]) / 2;
    } else {
      if (status == kExact) decode_reply(status, sent_);
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = (x[k] + decoded_[k]) / 2;
    }
    // The averaged model is the new pre-local-step model, and what others now see.
    pre_local_.assign(x.begin(), x.end());
    published_.assign(x.begin(), x.end());
    return status;
  }

  // Sends request_ (replaced by `request` when given) to `partner` and waits,
  // serving, for the reply in reply_. Returns the reply's status.
  std::byte exchange(std::span<double> x, int partner, std::vector<std::byte> request = {}) {
    if (!request.empty()) request_ = std::move(request);
    reply_.resize(1 + payload_capacity(x.size()));
    std::vector<MPI_Request> mine;
    comm_.irecv(as_bytes(reply_), partner, kReplyTag, mine);
    comm_.isend(as_const_bytes(request_), partner, kRequestTag, mine);
    waiting_ = true;
    wait_serving(mine[0], x, "swarm: a partner's reply");
    waiting_ = false;
    comm_.wait_all(mine, "swarm: a request's send");
    return reply_[0];
  }

  // The request's header with kExactRequest set, then `model` itself (may be empty).
  std::vector<std::byte> exact_request(const std::uint32_t header[2], std::span<const double> model) {
    const std::uint32_t flagged[2] = {header[0], header[1] | kExactRequest};
    std::vector<std::byte> out(sizeof flagged);
    std::memcpy(out.data(), flagged, sizeof flagged);
    if (!model.empty()) {
      exact_.encode(model, EncodeContext{}, encoded_);
      out.insert(out.end(), encoded_.begin(), encoded_.end());
    }
    return out;
  }

  // Decodes reply_'s payload (status kDecoded or kExact) near `near` into decoded_.
  bool decode_reply(std::byte status, std::span<const double> near) {
    const std::size_t d = near.size();
    decoded_.resize(d);
    const Quantizer& codec = status == kExact ? exact_ : quantizer_;
    return codec.decode(std::span<const std::byte>(reply_).subspan(1, codec.encoded_bytes(d)), near, decoded_).ok;
  }

  static std::uint32_t header_word(const std::vector<std::byte>& message, int k) {
    std::uint32_t word;
    std::memcpy(&word, message.data() + k * sizeof word, sizeof word);
    return word;
  }

  // The largest payload of a request or reply: the quantized model or the model itself.
  std::size_t payload_capacity(std::size_t d) const {
    return std::max(quantizer_.encoded_bytes(d), exact_.encoded_bytes(d));
  }

  // The dither key of an interaction: (initiator's round, initiator, 2 * attempt),
  // whatever kExactRequest says.
  static EncodeContext request_context(std::uint64_t seed, const std::uint32_t header[2], int initiator) {
    const std::uint32_t attempt = header[1] & ~kExactRequest;
    return {seed, header[0], static_cast<std::uint64_t>(initiator), 2 * static_cast<std::uint64_t>(attempt)};
  }

  static std::span<std::uint8_t> as_bytes(std::vector<std::byte>& v) {
    return {reinterpret_cast<std::uint8_t*>(v.data()), v.size()};
  }
  static std::span<const std::uint8_t> as_const_bytes(const std::vector<std::byte>& v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()};
  }

  // Keeps one receive posted for requests from anyone: waiting on it alongside
  // one's own request (MPI_Waitany) serves partners without polling, which under
  // SMPI would cost wall time on every simulated peer.
  void listen() {
    check_mpi(MPI_Irecv(inbox_.data(), static_cast<int>(inbox_.size()), MPI_BYTE, MPI_ANY_SOURCE, kRequestTag,
                        comm_.raw(), &listen_),
              "MPI_Irecv");
  }

  // Serves requests until `other` completes.
  void wait_serving(MPI_Request& other, std::span<double> x, const char* what) {
    for (;;) {
      MPI_Request both[2] = {other, listen_};
      MPI_Status status;
      const int which = comm_.wait_any(both, &status, what);
      other = both[0];
      listen_ = both[1];
      if (which == 0) break;
      handle(status, x);
    }
    reap_replies();
  }

  // Serves the requests that have arrived; never blocks.
  void serve(std::span<double> x) {
    for (;;) {
      int arrived = 0;
      MPI_Status status;
      check_mpi(MPI_Test(&listen_, &arrived, &status), "MPI_Test");
      if (!arrived) break;
      handle(status, x);
    }
    reap_replies();
  }

  // One request, just received into inbox_.
  void handle(const MPI_Status& status, std::span<double> x) {
    int bytes = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    incoming_.assign(inbox_.begin(), inbox_.begin() + bytes);
    const int initiator = status.MPI_SOURCE;
    listen();
    if (mode_ == SwarmMode::blocking && waiting_) {
      // This peer's model is promised to its own partner until the reply comes.
      // Lower ranks wait for it, higher ranks are turned away: a chain of waits
      // climbs in rank, so it can never close into a cycle.
      if (initiator < comm_.rank()) {
        deferred_.push_back({initiator, std::move(incoming_)});
        incoming_.clear();
      } else {
        PendingReply& r = replies_.emplace_back();
        r.bytes.push_back(kBusy);
        comm_.isend(as_const_bytes(r.bytes), initiator, kReplyTag, r.request);
      }
      return;
    }
    answer(initiator, x);
  }

  // Frees the replies already delivered (their buffers must live until then).
  void reap_replies() {
    while (!replies_.empty()) {
      int done = 0;
      check_mpi(MPI_Test(&replies_.front().request[0], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) break;
      replies_.pop_front();
    }
  }

  // Answers the request in incoming_. Blocking: R_i is what this peer takes for the
  // initiator's X_i (decoded, or the model itself after a resend) and Y_j what the
  // initiator will take for this peer's: the decoding of the reply near R_i, which
  // this peer computes itself, or, when that fails (lattice), the model itself in a
  // kExact reply. Both apply their increment from (R_i, Y_j): delta_j = (R_i - Y_j)/2.
  void answer(int initiator, std::span<double> x) {
    PendingReply& r = replies_.emplace_back();
    const std::size_t d = x.size();
    // The reply carries the model as it was before this interaction: the initiator
    // computes its increment from the same two values as this peer.
    const std::vector<double> before = reference();
    std::uint32_t header[2];
    std::memcpy(header, incoming_.data(), sizeof header);
    const bool exact = (header[1] & kExactRequest) != 0;
    const bool lattice = quantizer_.spec().kind == QuantizerKind::lattice;
    const std::span<const std::byte> payload(incoming_.data() + sizeof header, incoming_.size() - sizeof header);
    // Dither keyed by the interaction (initiator's round and attempt, initiator),
    // one message after the request's: it does not depend on timing.
    EncodeContext context = request_context(seed_, header, initiator);
    context.message += 1;
    std::byte status = kDecoded;
    encoded_.clear();
    if (mode_ == SwarmMode::non_blocking) {
      if (exact) status = kExact;
      (exact ? exact_ : quantizer_).encode(before, context, encoded_);
    } else {
      seen_.resize(d);
      if (!(exact ? exact_ : quantizer_).decode(payload, before, seen_).ok) {
        ++served_failures_;
        reply(r, initiator, lattice ? kResend : kRefused);
        return;
      }
      quantizer_.encode(before, context, encoded_);
      decoded_.resize(d);
      if (!quantizer_.decode(encoded_, seen_, decoded_).ok) {  // the initiator would fail to decode
        ++served_failures_;
        if (!lattice) {
          reply(r, initiator, kRefused);
          return;
        }
        status = kExact;
        exact_.encode(before, EncodeContext{}, encoded_);
        decoded_ = before;
      }
      for (std::size_t k = 0; k < d; ++k) {
        const double delta = (seen_[k] - decoded_[k]) / 2;
        x[k] += delta;
        pre_local_[k] += delta;
      }
      published_.assign(x.begin(), x.end());
    }
    r.bytes.push_back(status);
    r.bytes.insert(r.bytes.end(), encoded_.begin(), encoded_.end());
    comm_.isend(as_const_bytes(r.bytes), initiator, kReplyTag, r.request);
  }

  // A reply of its status byte alone.
  void reply(PendingReply& r, int initiator, std::byte status) {
    r.bytes.assign(1, status);
    comm_.isend(as_const_bytes(r.bytes), initiator, kReplyTag, r.request);
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
};

}  // namespace

std::unique_ptr<Protocol> make_swarm(const ProtocolOptions& options, Comm& comm) {
  return std::make_unique<SwarmProtocol>(options, comm);
}

}  // namespace avb
