// SwarmSGD's averaging, the partner's side: serving requests whenever the peer is
// inside the protocol, and the settle barrier (wire protocol and invariants:
// swarm_protocol.hpp).
#include "protocols/swarm_protocol.hpp"

#include <utility>

#include "core/error.hpp"

namespace avb::swarm {

void SwarmProtocol::settle(std::span<double> x, GroupCounters& counters) {
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

// Keeps one receive posted for requests from anyone: waiting on it alongside
// one's own request (MPI_Waitany) serves partners without polling, which under
// SMPI would cost wall time on every simulated peer.
void SwarmProtocol::listen() {
  if (model_extra_ > 0) {  // received through Comm, which strips the padding
    std::vector<MPI_Request> one;
    comm_.irecv(as_bytes(inbox_), MPI_ANY_SOURCE, kRequestTag, one, inbox_.size() + model_extra_);
    listen_ = one[0];
    return;
  }
  check_mpi(MPI_Irecv(inbox_.data(), static_cast<int>(inbox_.size()), MPI_BYTE, MPI_ANY_SOURCE, kRequestTag,
                      comm_.raw(), &listen_),
            "MPI_Irecv");
}

// Serves requests until `other` completes.
void SwarmProtocol::wait_serving(MPI_Request& other, std::span<double> x, const char* what) {
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
void SwarmProtocol::serve(std::span<double> x) {
  for (;;) {
    MPI_Status status;
    if (!comm_.test(listen_, &status)) break;
    handle(status, x);
  }
  reap_replies();
}

// One request, just received into inbox_.
void SwarmProtocol::handle(const MPI_Status& status, std::span<double> x) {
  int bytes = 0;
  check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
  if (static_cast<std::size_t>(bytes) > 2 * sizeof(std::uint32_t)) bytes -= static_cast<int>(model_extra_);
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
void SwarmProtocol::reap_replies() {
  while (!replies_.empty()) {
    if (!comm_.test(replies_.front().request[0], MPI_STATUS_IGNORE)) break;
    replies_.pop_front();
  }
}

// Answers the request in incoming_. Blocking: R_i is what this peer takes for the
// initiator's X_i (decoded, or the model itself after a resend) and Y_j what the
// initiator will take for this peer's: the decoding of the reply near R_i, which
// this peer computes itself, or, when that fails (lattice), the model itself in a
// kExact reply. Both apply their increment from (R_i, Y_j): delta_j = (R_i - Y_j)/2.
void SwarmProtocol::answer(int initiator, std::span<double> x) {
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
  comm_.isend(as_const_bytes(r.bytes), initiator, kReplyTag, r.request, charged(r.bytes.size(), 1));
}

// A reply of its status byte alone.
void SwarmProtocol::reply(PendingReply& r, int initiator, std::byte status) {
  r.bytes.assign(1, status);
  comm_.isend(as_const_bytes(r.bytes), initiator, kReplyTag, r.request);
}

}  // namespace avb::swarm
