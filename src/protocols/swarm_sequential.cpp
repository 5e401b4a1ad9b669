// SwarmSGD's averaging on the sequential engine, peer by peer as events
// (swarm_sequential.hpp). Each function below mirrors the MPI form's function of
// the same name (swarm.cpp, swarm_serve.cpp); where the MPI form waits, this one
// returns and resumes on the event the wait would end with.
#include "protocols/swarm_sequential.hpp"

#include <cstring>

#include "core/error.hpp"
#include "protocols/swarm_protocol.hpp"

namespace avb::swarm {

void SwarmPeers::step(Population& x, int p, int t) {
  Peer& s = at(p);
  s.t = t;
  if (!alive_set(t).has(p)) {
    context_->step_done(p);
    return;
  }
  if (clock_ == SwarmClock::round) {
    initiate(x, p, 0);
    return;
  }
  clock(p).units = 0;
  s.tick = 0;
  next_tick(x, p);
}

void SwarmPeers::next_tick(Population& x, int p) {
  const Peer& s = at(p);
  Clock& c = clock(p);
  c.gap = tick_gap(context_->seed, s.t, p, s.tick);
  if (c.units + c.gap >= 1.0)
    idle_serving(x, p, 1.0 - c.units, true);
  else
    idle_serving(x, p, c.gap, false);
}

// Serves, then idles `units` of the clock in slices of kIdleSlice, serving at the
// end of each (the MPI form's idle_serving()). Only the ends of slices that have a
// request to take are events (serve_at_next_slice), and the idle's end; each
// serve's MPI_Test delays the slices after it.
void SwarmPeers::idle_serving(Population& x, int p, double units, bool last) {
  at(p).doing = Doing::idle;
  at(p).last_idle = last;
  const double cost = serve(x, p);
  Clock& s = clock(p);
  s.idle_from = now() + cost;
  s.idle_seconds = units * kSecondsPerUnit;
  s.idle_extra = 0;
  s.slices = 0;
  for (double left = s.idle_seconds; left > 0; left -= kIdleSlice) ++s.slices;
  context_->queue.at(slice_end(s, s.slices), p, kIdleEnd);
}

// A request has arrived at idle p: p takes it at the end of the slice it arrived
// in (the idle's last slice: at the idle's end).
void SwarmPeers::serve_at_next_slice(int p) {
  const Clock& s = clock(p);
  const double per_slice = kIdleSlice + kTestSeconds;
  int k = std::max(1, static_cast<int>((now() - s.idle_from - s.idle_extra) / per_slice));
  while (k > 1 && slice_end(s, k - 1) >= now()) --k;
  while (k < s.slices && slice_end(s, k) < now()) ++k;
  if (k < s.slices) context_->queue.at(slice_end(s, k), p, kServe);
}

void SwarmPeers::idle_over(Population& x, int p) {
  Clock& c = clock(p);
  if (slice_end(c, c.slices) > now()) {  // requests taken on the way delayed the end
    context_->queue.at(slice_end(c, c.slices), p, kIdleEnd);
    return;
  }
  serve(x, p);
  Peer& s = at(p);
  s.doing = Doing::outside;
  if (s.last_idle) {
    context_->step_done(p);
    return;
  }
  c.units += c.gap;
  initiate(x, p, s.tick);
}

void SwarmPeers::initiate(Population& x, int p, int tick) {
  Peer& s = at(p);
  s.tick = tick;
  s.attempt = 0;
  s.tried = s.done = false;
  next_attempt(x, p);
}

void SwarmPeers::next_attempt(Population& x, int p) {
  Peer& s = at(p);
  if (s.attempt < kMaxAttempts && !s.done) {
    s.partner = choose_partner(p, s.t, s.tick * kMaxAttempts + s.attempt);
    if (s.partner >= 0) {
      s.tried = true;
      s.resent = false;
      send_request(x, p, false, mode_ == SwarmMode::blocking);
      return;
    }
  }
  finish_initiate(x, p);
}

// The alive peers of round t: built once a round (kept for a few rounds, as
// SGD's peers are), then each question is a bit, not a Philox block.
const AliveSet& SwarmPeers::alive_set(int t) {
  if (t != alive_round_) {
    auto [it, added] = alive_lists_.try_emplace(t);
    if (added) {
      if (alive_lists_.size() > kAliveRounds) {
        alive_lists_.clear();
        it = alive_lists_.try_emplace(t).first;
      }
      it->second.assign(context_->failures->alive_peers(t), n_);
    }
    alive_round_ = t;
    alive_ = &it->second;
  }
  return *alive_;
}

int SwarmPeers::choose_partner(int p, int t, int draw) {
  if (complete_) {  // every alive peer but p, without listing N - 1 neighbours per draw
    alive_set(t);
    const std::vector<int>& alive = alive_->peers;
    if (n_ > 1 && alive.size() == static_cast<std::size_t>(n_)) {  // nobody is down: alive[k] is k
      const auto k = static_cast<int>(partner_index(context_->seed, t, p, draw, alive.size() - 1));
      return k >= p ? k + 1 : k;
    }
    const bool counted = alive_->has(p);
    const std::size_t count = alive.size() - (counted ? 1 : 0);
    if (count == 0) return -1;
    const std::size_t k = partner_index(context_->seed, t, p, draw, count);
    return alive[counted && k >= alive_->below(p) ? k + 1 : k];
  }
  candidates_.clear();
  for (int j : topology_->out_neighbours(t, p))
    if (j != p && alive_set(t).has(j)) candidates_.push_back(j);
  if (candidates_.empty()) return -1;
  return candidates_[partner_index(context_->seed, t, p, draw, candidates_.size())];
}

// The request of the current attempt: its header, then Q(X_i) (the first request
// of a blocking interaction), the model itself (a blocking resend), or nothing.
void SwarmPeers::send_request(Population& x, int p, bool exact, bool with_model) {
  Peer& s = at(p);
  const int m = new_message(p, s.partner, false);
  const std::uint32_t header[2] = {static_cast<std::uint32_t>(s.t),
                                   static_cast<std::uint32_t>(s.tick * kMaxAttempts + s.attempt) |
                                       (exact ? kExactRequest : 0u)};
  if (!with_model)
    encoded_.clear();
  else if (exact)
    exact_.encode(reference(p), EncodeContext{}, encoded_);  // encode() sizes the buffer
  else
    quantizer_.encode(reference(p), request_context(context_->seed, header, p), encoded_);
  messages_[static_cast<std::size_t>(m)].bytes.assign(std::as_bytes(std::span(header)), encoded_);
  if (s.request >= 0) release(s.request);
  s.request = m;
  post(m);
  s.doing = Doing::waiting;
  if (s.arrived) handle(x, p);  // taken while waiting: deferred or turned away
}

void SwarmPeers::handle(Population& x, const Event& e) {
  if (e.kind == kIdleEnd) {
    idle_over(x, e.peer);
    return;
  }
  if (e.kind == kServe) {
    if (at(e.peer).doing == Doing::idle && at(e.peer).arrived) {
      handle(x, e.peer);
      clock(e.peer).idle_extra += kTestSeconds;
    }
    return;
  }
  if (e.kind == kReplyTaken) {
    on_reply(x, e.peer, static_cast<int>(e.arg));
    return;
  }
  // An arrival: the receiver's line and the sender's (their link counters) are
  // asked for before they are used (at a million peers each is a cache miss).
  const Message& m = messages_[static_cast<std::size_t>(e.arg)];
  __builtin_prefetch(&peers_[static_cast<std::size_t>(m.from)], 1);
  __builtin_prefetch(&peers_[static_cast<std::size_t>(e.peer)], 1);
  context_->transit->end(m.from, e.peer);
  if (m.reply) {
    // wait_serving() is over: it tests the replies its peer sent before going on.
    at(m.to).doing = Doing::outside;
    const double tests = reap_replies(m.to);
    if (tests > 0 && !context_->queue.advance_to(now() + tests))
      context_->queue.at(now() + tests, m.to, kReplyTaken, e.arg);
    else
      on_reply(x, m.to, static_cast<int>(e.arg));
    return;
  }
  Peer& q = at(m.to);
  q.arrived = true;
  if (q.doing == Doing::waiting || q.doing == Doing::settling)
    handle(x, m.to);
  else if (q.doing == Doing::idle)
    serve_at_next_slice(m.to);
}

// The reply to the current attempt's request has arrived: as interact() goes on
// after exchange() returns.
void SwarmPeers::on_reply(Population& x, int p, int reply) {
  Peer& s = at(p);
  s.doing = Doing::outside;
  const std::byte status = messages_[static_cast<std::size_t>(reply)].bytes[0];
  const bool lattice = quantizer_.spec().kind == QuantizerKind::lattice;
  if (status == kResend) {  // blocking: the partner could not decode Q(X_i)
    release(reply);
    if (s.resent) throw Error("swarm: the partner refused a request sent at full precision");
    s.resent = true;
    send_request(x, p, true, true);
    return;
  }
  if (mode_ == SwarmMode::non_blocking && status == kDecoded &&
      !decode_reply(messages_[static_cast<std::size_t>(reply)], reference(p))) {
    effect_.decode_failures += 1;
    release(reply);
    if (!lattice) {
      attempt_over(x, p, kRefused);
      return;
    }
    send_request(x, p, true, false);
    return;
  }
  if (status == kDecoded || status == kExact) apply(x, p, status, messages_[static_cast<std::size_t>(reply)]);
  release(reply);
  attempt_over(x, p, status);
}

bool SwarmPeers::decode_reply(const Message& reply, std::span<const double> near) {
  const std::size_t d = near.size();
  fit(decoded_, d);
  const Quantizer& codec = reply.bytes[0] == kExact ? exact_ : quantizer_;
  return codec.decode(reply.bytes.view().subspan(1, codec.encoded_bytes(d)), near, decoded_).ok;
}

// The averaging step of an interaction whose reply decoded (interact()'s end).
void SwarmPeers::apply(Population& x, int p, std::byte status, const Message& reply) {
  const std::span<double> mine = x.peer(p);
  const std::span<const double> sent = reference(p);  // unchanged while p waited
  if (mode_ == SwarmMode::blocking) {
    const std::span<const std::byte> request = messages_[static_cast<std::size_t>(at(p).request)].bytes.view();
    std::uint32_t header[2];
    std::memcpy(header, request.data(), kHeader);
    fit(own_view_, sent.size());
    if (header[1] & kExactRequest)
      own_view_.assign(sent.begin(), sent.end());
    else if (!quantizer_.decode(request.subspan(kHeader), sent, own_view_).ok)
      throw Error("swarm: a request the partner decoded does not decode near its sender");
    if (!decode_reply(reply, own_view_)) throw Error("swarm: a reply its sender checked did not decode");
    for (std::size_t k = 0; k < mine.size(); ++k) mine[k] += (decoded_[k] - own_view_[k]) / 2;
  } else {
    if (status == kExact) decode_reply(reply, sent);
    for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = (mine[k] + decoded_[k]) / 2;
  }
  offer(mine, p);
}

void SwarmPeers::attempt_over(Population& x, int p, std::byte status) {
  Peer& s = at(p);
  if (status == kBusy) {  // the partner was in an interaction of its own: draw again
    ++s.attempt;
  } else {
    s.done = true;
  }
  next_attempt(x, p);
}

// The tick's interaction is over: count it, answer the requests held meanwhile
// in arrival order, and go on with the round.
void SwarmPeers::finish_initiate(Population& x, int p) {
  Peer& s = at(p);
  if (s.request >= 0) {
    release(s.request);
    s.request = -1;
  }
  if (s.tried) {
    effect_.groups += 1;
    if (!s.done) effect_.failed_groups += 1;
  }
  while (!s.deferred.empty()) answer(x, p, pop(s.deferred, messages_));
  if (clock_ == SwarmClock::round) {
    context_->step_done(p);
    return;
  }
  ++s.tick;
  next_tick(x, p);
}

std::unique_ptr<EventPeers> make_swarm_peers(const ProtocolOptions& options, int n_peers) {
  return std::make_unique<SwarmPeers>(options, n_peers);
}

}  // namespace avb::swarm

namespace avb {

std::unique_ptr<SequentialProtocol> make_sequential_swarm(const ProtocolOptions& options, int n_peers) {
  return std::make_unique<EventRound>(swarm::make_swarm_peers(options, n_peers));
}

}  // namespace avb
