// SwarmSGD's averaging, the initiator's side: the ticks of a round, partner
// draws and one interaction (wire protocol and invariants: swarm_protocol.hpp).
#include "protocols/swarm_protocol.hpp"
#include "protocols/swarm_sequential.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sim/compute.hpp"
#include "protocols/resources.hpp"

namespace avb {

SwarmMode parse_swarm_mode(std::string_view name) { return kSwarmModeNames.parse(name); }

std::string_view to_string(SwarmMode mode) { return kSwarmModeNames.name(mode); }

SwarmClock parse_swarm_clock(std::string_view name) { return kSwarmClockNames.parse(name); }

std::string_view to_string(SwarmClock clock) { return kSwarmClockNames.name(clock); }

namespace swarm {

SwarmProtocol::~SwarmProtocol() {
  // After the last settle() nothing is in flight but the listening receive.
  // Errors are ignored: a destructor may run while an MPI error unwinds.
  if (listen_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&listen_);
    MPI_Wait(&listen_, MPI_STATUS_IGNORE);
  }
  for (auto& r : replies_) MPI_Waitall(static_cast<int>(r.request.size()), r.request.data(), MPI_STATUSES_IGNORE);
}

void SwarmProtocol::begin_trial(std::span<const double> x, std::uint64_t seed) {
  started_ = true;
  seed_ = seed;
  topology_.emplace(topology_spec_, comm_.size(), seed);
  pre_local_.assign(x.begin(), x.end());
  published_.assign(x.begin(), x.end());
  replies_.clear();
  inbox_.resize(2 * sizeof(std::uint32_t) + payload_capacity(x.size()));
  model_extra_ = sizeof(double) * (comm_.model_length(x.size()) - x.size());
  listen();
}

void SwarmProtocol::step(std::span<double> x, Round& round) {
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
  double now = 0.0;
  for (int tick = 0;; ++tick) {
    const double gap = tick_gap(round.seed, t, me, tick);
    if (now + gap >= 1.0) {
      idle_serving(1.0 - now, x);
      break;
    }
    idle_serving(gap, x);
    now += gap;
    initiate(x, round, tick);
  }
}

void SwarmProtocol::on_join(std::span<const double> x) {
  if (!started_) return;
  pre_local_.assign(x.begin(), x.end());
  published_.assign(x.begin(), x.end());
}

void SwarmProtocol::progress(std::span<double> x) {
  if (!started_) return;
  published_.assign(x.begin(), x.end());
  serve(x);
}

// One interaction initiated by this peer (the `tick`-th of its round), drawing
// another partner while the drawn one is busy.
void SwarmProtocol::initiate(std::span<double> x, Round& round, int tick) {
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
void SwarmProtocol::idle_serving(double units, std::span<double> x) {
  serve(x);
  if (!time_is_simulated()) return;
  for (double left = units * kSecondsPerUnit; left > 0; left -= kIdleSlice) {
    idle_seconds(std::min(left, kIdleSlice));
    serve(x);
  }
}

// Uniform over the neighbours alive in round t, from the partner stream (draw
// `draw`: the partner stream is keyed by (round, peer, draw), draw = tick * kMaxAttempts + attempt).
int SwarmProtocol::choose_partner(const Round& round, int attempt) {
  const int me = comm_.rank(), t = round.t;
  alive_.clear();
  for (int j : topology_->out_neighbours(t, me))
    if (j != me && round.failures.alive(t, j)) alive_.push_back(j);
  if (alive_.empty()) return -1;
  return alive_[partner_index(round.seed, t, me, attempt, alive_.size())];
}

// One request to `partner` and its reply; serves others while waiting. Returns
// the reply's status. With the lattice quantizer a message that does not decode
// is sent again as the model itself (docs/protocols.md, swarm), so every
// interaction a partner accepts completes.
std::byte SwarmProtocol::interact(std::span<double> x, Round& round, int partner, int attempt) {
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
std::byte SwarmProtocol::exchange(std::span<double> x, int partner, std::vector<std::byte> request) {
  if (!request.empty()) request_ = std::move(request);
  reply_.resize(1 + payload_capacity(x.size()));
  std::vector<MPI_Request> mine;
  comm_.irecv(as_bytes(reply_), partner, kReplyTag, mine, reply_.size() + model_extra_);
  comm_.isend(as_const_bytes(request_), partner, kRequestTag, mine, charged(request_.size(), 2 * sizeof(std::uint32_t)));
  waiting_ = true;
  wait_serving(mine[0], x, "swarm: a partner's reply");
  waiting_ = false;
  comm_.wait_all(mine, "swarm: a request's send");
  return reply_[0];
}

// The request's header with kExactRequest set, then `model` itself (may be empty).
std::vector<std::byte> SwarmProtocol::exact_request(const std::uint32_t header[2], std::span<const double> model) {
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
bool SwarmProtocol::decode_reply(std::byte status, std::span<const double> near) {
  const std::size_t d = near.size();
  decoded_.resize(d);
  const Quantizer& codec = status == kExact ? exact_ : quantizer_;
  return codec.decode(std::span<const std::byte>(reply_).subspan(1, codec.encoded_bytes(d)), near, decoded_).ok;
}

}  // namespace swarm

std::unique_ptr<Protocol> make_swarm(const ProtocolOptions& options, Comm& comm) {
  return std::make_unique<swarm::SwarmProtocol>(options, comm);
}

// Each interaction moves a model each way, in up to kMaxAttempts attempts (a
// blocking request carries the model even when the partner turns out busy), each
// with its request header and status byte. The round clock starts one per peer; a
// Poisson clock's ticks per round are Poisson(N) in all, bounded here by N plus
// twelve standard deviations (exceeded with probability below 1e-30).
ProtocolResources resources_swarm(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r;
  const double message = message_bytes(o, static_cast<double>(q.model_dim));
  const double interactions =
      o.swarm.clock == SwarmClock::round ? q.peers : q.peers + 12 * std::sqrt(static_cast<double>(q.peers)) + 64;
  r.round_bytes = interactions * swarm::kMaxAttempts * (2 * message + 2 * sizeof(std::uint32_t) + 1);
  r.pattern = {2, message, 2 * message};
  r.messages_in_flight = 6;
  r.peer_vectors = 4;
  // The sequential form (swarm_sequential.hpp): the models a peer offers
  // (pre-local and published), its state (and its Poisson clock's), the event
  // loop's share (the peer's start and barrier entry, its link counters, and the
  // radix heap's entries: its buckets keep the capacity events leave behind, a
  // dozen entries a peer at most), the replies it has sent, and up to two
  // messages of its own in flight, each with the bytes it holds beyond those
  // kept in the message: `dim` coordinates encoded, however many --model-dim
  // charges; and its share of the alive sets of the rounds kept at once.
  r.population_vectors = 2;
  constexpr double kQueueEntries = 12, kQueueEntry = EventQueue::kEntryBytes, kSentReplies = 4;
  const double held = message_bytes(o, static_cast<double>(q.dim)) + 2 * sizeof(std::uint32_t);
  const double spilled = held > swarm::kInlineBytes ? held : 0.0;
  r.population_bytes = sizeof(swarm::Peer) + (o.swarm.clock == SwarmClock::poisson ? sizeof(swarm::Clock) : 0) +
                       3 * sizeof(double) + 2 * sizeof(int) + kQueueEntries * kQueueEntry +
                       kSentReplies * sizeof(swarm::Sent) + 2 * (sizeof(swarm::Message) + spilled) +
                       (swarm::kAliveRounds + 1) * swarm::AliveSet::kBytesPerPeer;
  r.work_per_peer = 1500;  // random partners: cache misses per message, more at a million peers
  if (o.swarm.clock == SwarmClock::poisson) r.idle_seconds = swarm::kSecondsPerUnit;
  return r;
}

SequentialFactory make_sequential_swarm;  // swarm_sequential.cpp: the event form

extern constinit const ProtocolForms kSwarmForms{make_swarm, make_sequential_swarm, resources_swarm};

}  // namespace avb
