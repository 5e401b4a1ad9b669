// SwarmSGD's averaging on the sequential engine, the partner's side and the
// messages (swarm_sequential.hpp; the MPI form's is swarm_serve.cpp).
#include <cstring>

#include "core/error.hpp"
#include "protocols/swarm_sequential.hpp"

namespace avb::swarm {

// serve(): one MPI_Test of the listening receive, which takes the request that
// has arrived, if any (only one can have: the next moves once it is taken).
// Returns the simulated seconds the tests cost.
double SwarmPeers::serve(Population& x, int p) {
  double tests = kTestSeconds;
  if (at(p).arrived) {
    handle(x, p);
    tests += kTestSeconds;
  }
  return tests + reap_replies(p);
}

// The MPI form's reap_replies(): tests the replies sent, oldest first, dropping
// those that have arrived, until one has not. Returns the tests' seconds.
double SwarmPeers::reap_replies(int p) {
  Peer& s = at(p);
  List& sent = s.replies;
  double seconds = 0;
  while (!sent.empty()) {
    seconds += kTestSeconds;
    if (s.oldest_reply > now()) break;
    free_sent_.put(pop(sent, sent_));
    if (!sent.empty()) s.oldest_reply = sent_[static_cast<std::size_t>(sent.head)].arrives;
  }
  return seconds;
}

void SwarmPeers::drop_replies(int p) {
  List& sent = at(p).replies;
  for (int r = sent.head; r >= 0; r = sent_[static_cast<std::size_t>(r)].next) free_sent_.put(r);
  sent = List{};
}

// The request that has arrived at q: the listening receive is posted again (the
// next request in q's mailbox starts moving), then the request is held, turned
// away or answered, as the MPI form's handle().
void SwarmPeers::handle(Population& x, int q) {
  Peer& s = at(q);
  const int m = s.matched;
  s.matched = -1;
  s.arrived = false;
  if (!s.mailbox.empty()) {
    s.matched = pop(s.mailbox, messages_);
    start(s.matched);
  }
  const int initiator = messages_[static_cast<std::size_t>(m)].from;
  if (mode_ == SwarmMode::blocking && s.doing == Doing::waiting) {
    // Lower ranks wait for q's own interaction to end, higher ranks are turned away.
    if (initiator < q)
      push(s.deferred, m, messages_);
    else
      reply(q, m, kBusy, {});
    return;
  }
  answer(x, q, m);
}

// The MPI form's answer(): the reply carries q's model as it was before this
// interaction; blocking, q applies delta_q = (R_i - Y_q) / 2.
void SwarmPeers::answer(Population& x, int q, int request) {
  const std::span<const std::byte> incoming = messages_[static_cast<std::size_t>(request)].bytes.view();
  const int initiator = messages_[static_cast<std::size_t>(request)].from;
  const std::span<const double> ref = reference(q);
  fit(before_, ref.size());
  copy(ref, before_);
  const std::size_t d = before_.size();
  std::uint32_t header[2];
  std::memcpy(header, incoming.data(), kHeader);
  const bool exact = (header[1] & kExactRequest) != 0;
  const bool lattice = quantizer_.spec().kind == QuantizerKind::lattice;
  const std::span<const std::byte> payload = incoming.subspan(kHeader);
  EncodeContext context = request_context(context_->seed, header, initiator);
  context.message += 1;
  std::byte status = kDecoded;
  if (mode_ == SwarmMode::non_blocking) {
    if (exact) status = kExact;
    (exact ? exact_ : quantizer_).encode(before_, context, encoded_);
    reply(q, request, status, encoded_);
    return;
  }
  fit(seen_, d);
  if (!(exact ? exact_ : quantizer_).decode(payload, before_, seen_).ok) {
    effect_.decode_failures += 1;
    reply(q, request, lattice ? kResend : kRefused, {});
    return;
  }
  quantizer_.encode(before_, context, encoded_);
  fit(decoded_, d);
  if (!quantizer_.decode(encoded_, seen_, decoded_).ok) {  // the initiator would fail to decode
    effect_.decode_failures += 1;
    if (!lattice) {
      reply(q, request, kRefused, {});
      return;
    }
    status = kExact;
    exact_.encode(before_, EncodeContext{}, encoded_);
    decoded_ = before_;
  }
  const std::span<double> mine = x.peer(q);
  const std::span<double> pre = pre_local(q);
  for (std::size_t k = 0; k < d; ++k) {
    const double delta = (seen_[k] - decoded_[k]) / 2;
    mine[k] += delta;
    pre[k] += delta;
  }
  copy(mine, published(q));
  reply(q, request, status, encoded_);
}

// A reply from q to the initiator of `request`: it moves at once (the initiator
// posted its receive before sending).
void SwarmPeers::reply(int q, int request, std::byte status, std::span<const std::byte> payload) {
  const int initiator = messages_[static_cast<std::size_t>(request)].from;
  const int m = new_message(q, initiator, true);
  messages_[static_cast<std::size_t>(m)].bytes.assign(std::span(&status, 1), payload);
  const double arrives = start(m);
  const int r = take_slot(sent_, free_sent_);
  sent_[static_cast<std::size_t>(r)].arrives = arrives;
  Peer& s = at(q);
  if (s.replies.empty()) s.oldest_reply = arrives;
  push(s.replies, r, sent_);
}

int SwarmPeers::new_message(int from, int to, bool is_reply) {
  const int m = take_slot(messages_, free_);
  Message& msg = messages_[static_cast<std::size_t>(m)];
  msg.from = from;
  msg.to = to;
  msg.next = -1;
  msg.reply = is_reply;
  return m;
}

void SwarmPeers::post(int m) {
  Peer& q = at(messages_[static_cast<std::size_t>(m)].to);
  if (q.matched < 0) {
    q.matched = m;
    start(m);
  } else {
    push(q.mailbox, m, messages_);
  }
}

// The message moves from now: its charged size (Comm's padding under
// --model-dim for a message that carries a model) on the transit's links.
double SwarmPeers::start(int m) {
  const Message& msg = messages_[static_cast<std::size_t>(m)];
  const std::size_t header = msg.reply ? 1 : kHeader;
  const std::size_t size = msg.bytes.size();
  const std::size_t charged = size > header ? size + model_extra_ : size;
  context_->bytes += charged;
  const double seconds = context_->transit->start(msg.from, msg.to, static_cast<double>(charged));
  context_->queue.at(now() + seconds, msg.to, kArrive, m);
  return now() + seconds;
}

}  // namespace avb::swarm
