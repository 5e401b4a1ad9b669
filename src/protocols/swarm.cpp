// SwarmSGD's averaging (Nadiradze et al. 2021): after its local steps a peer picks
// a neighbour uniformly at random and averages with it, asynchronously, with
// two-sided MPI only (SMPI 3.32 aborts on passive-target RMA).
//
// Wire protocol, on the trial's communicator:
//   initiator i -> partner j   kRequest: i's round t (8 bytes), then blocking:
//                                        Q(X_i), i's pre-local-step model; non-blocking: nothing
//   partner j  -> initiator i  kReply:   one status byte, then Q(model of j)
// A peer serves requests whenever it is inside the protocol: while it waits for its
// own reply, in progress() between local steps, and in settle(). Requests are
// received only once MPI_Iprobe has seen them and answered with MPI_Isend, so no
// peer ever blocks on another: any pattern of simultaneous requests (i -> j while
// j -> i, chains, stars) completes.
//
// Blocking interactions are written as increments, which is what keeps the mean
// exact under concurrency: j serves i by delta_j = (X_i - X_j)/2 and i, on the
// reply, applies delta_i = (X_j - X_i)/2 with the same two values, so
// delta_i = -delta_j bit for bit, whatever else either peer served in between. Each
// adds its increment both to its current model x (local progress re-applied) and to
// its pre-local-step model X.
//
// settle(): a peer whose own request has been answered enters MPI_Ibarrier and
// keeps serving until the barrier completes. The barrier completes only when every
// peer's request has been answered, so no request is left in flight; the replies
// this peer sent are then completed too.
#include "protocols/swarm.hpp"

#include <cstring>
#include <deque>
#include <optional>
#include <utility>

#include "core/rng.hpp"

namespace avb {

SwarmMode parse_swarm_mode(std::string_view name) {
  if (name == "blocking") return SwarmMode::blocking;
  if (name == "non-blocking") return SwarmMode::non_blocking;
  throw ConfigError("--mode: '" + std::string(name) + "' is not one of {blocking, non-blocking}");
}

std::string_view to_string(SwarmMode mode) { return mode == SwarmMode::blocking ? "blocking" : "non-blocking"; }

namespace {

constexpr int kRequestTag = 0x5701;
constexpr int kReplyTag = 0x5702;
constexpr std::byte kDecoded{1};
constexpr std::byte kRefused{0};  // the partner could not decode the request: nobody moves

class SwarmProtocol final : public Protocol {
 public:
  SwarmProtocol(const ProtocolOptions& o, Comm& comm)
      : mode_(o.swarm_mode), quantizer_(o.quantizer), topology_spec_(*o.topology), comm_(comm) {}

  void step(std::span<double> x, Round& round) override {
    start_trial(x, round);
    const int me = comm_.rank(), t = round.t;
    round.counters.decode_failures += std::exchange(served_failures_, 0);
    if (!round.failures.alive(t, me)) return;
    const int partner = choose_partner(round);
    if (partner < 0) return;
    round.counters.groups += 1;

    // The request, and the receive of its reply, before anything else can happen.
    sent_.assign(reference().begin(), reference().end());
    const auto round_word = static_cast<std::uint64_t>(t);
    request_.resize(sizeof round_word);
    std::memcpy(request_.data(), &round_word, sizeof round_word);
    if (mode_ == SwarmMode::blocking) {
      encoded_.clear();
      quantizer_.encode(sent_, {round.seed, round_word, static_cast<std::uint64_t>(me), 0}, encoded_);
      request_.insert(request_.end(), encoded_.begin(), encoded_.end());
    }
    reply_.resize(1 + quantizer_.encoded_bytes(x.size()));
    std::vector<MPI_Request> mine;
    comm_.irecv(std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(reply_.data()), reply_.size()), partner,
                kReplyTag, mine);
    comm_.isend(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(request_.data()), request_.size()),
                partner, kRequestTag, mine);
    MPI_Request& reply = mine[0];
    for (;;) {
      int done = 0;
      check_mpi(MPI_Test(&reply, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
      serve(x);
    }
    Comm::wait_all(mine);  // the request's send

    if (reply_[0] == kRefused) return;
    decoded_.resize(x.size());
    const std::span<const std::byte> payload(reply_.data() + 1, reply_.size() - 1);
    if (!quantizer_.decode(payload, sent_, decoded_).ok) {
      round.counters.decode_failures += 1;
      return;
    }
    if (mode_ == SwarmMode::blocking) {
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double delta = (decoded_[k] - sent_[k]) / 2;
        x[k] += delta;
      }
    } else {
      for (std::size_t k = 0; k < x.size(); ++k) x[k] = (x[k] + decoded_[k]) / 2;
    }
    // The averaged model is the new pre-local-step model, and what others now see.
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
    MPI_Request barrier = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(comm_.raw(), &barrier), "MPI_Ibarrier");
    for (;;) {
      int done = 0;
      check_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) break;
      serve(x);
    }
    for (auto& r : replies_) Comm::wait_all(r.request);
    replies_.clear();
    counters.decode_failures += std::exchange(served_failures_, 0);
  }

 private:
  struct PendingReply {
    std::vector<std::byte> bytes;
    std::vector<MPI_Request> request;
  };

  void start_trial(std::span<const double> x, const Round& round) {
    if (started_ && seed_ == round.seed) return;
    started_ = true;
    seed_ = round.seed;
    topology_.emplace(topology_spec_, comm_.size(), round.seed);
    pre_local_.assign(x.begin(), x.end());
    published_.assign(x.begin(), x.end());
    replies_.clear();
  }

  // The model this peer offers: blocking, its pre-local-step model; non-blocking,
  // the last one it published.
  const std::vector<double>& reference() const { return mode_ == SwarmMode::blocking ? pre_local_ : published_; }

  // Uniform over the neighbours alive in round t, from the partner stream.
  int choose_partner(const Round& round) {
    const int me = comm_.rank(), t = round.t;
    alive_.clear();
    for (int j : topology_->out_neighbours(t, me))
      if (j != me && round.failures.alive(t, j)) alive_.push_back(j);
    if (alive_.empty()) return -1;
    const std::uint64_t bits = Stream(round.seed, StreamId::partner)
                                   .bits(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(me), 0);
    return alive_[static_cast<std::size_t>(bits % alive_.size())];
  }

  // Answers every request that has arrived; never blocks on another peer.
  void serve(std::span<double> x) {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kRequestTag, comm_.raw(), &flag, &status), "MPI_Iprobe");
      if (!flag) break;
      int bytes = 0;
      check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
      incoming_.resize(static_cast<std::size_t>(bytes));
      comm_.recv(std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(incoming_.data()), incoming_.size()),
                 status.MPI_SOURCE, kRequestTag);
      answer(status.MPI_SOURCE, x);
    }
    // Free the replies already delivered (their buffers must live until then).
    while (!replies_.empty()) {
      int done = 0;
      check_mpi(MPI_Test(&replies_.front().request[0], &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) break;
      replies_.pop_front();
    }
  }

  void answer(int initiator, std::span<double> x) {
    PendingReply& r = replies_.emplace_back();
    const std::vector<double>& mine = reference();
    // The reply carries the model as it was before this interaction: the initiator
    // computes its increment from the same two values as this peer.
    const std::vector<double> before = mine;
    std::uint64_t round_word = 0;
    std::memcpy(&round_word, incoming_.data(), sizeof round_word);
    const std::span<const std::byte> payload(incoming_.data() + sizeof round_word, incoming_.size() - sizeof round_word);
    std::byte status = kDecoded;
    if (mode_ == SwarmMode::blocking) {
      decoded_.resize(x.size());
      if (!quantizer_.decode(payload, before, decoded_).ok) {
        status = kRefused;
        ++served_failures_;
      } else {
        for (std::size_t k = 0; k < x.size(); ++k) {
          const double delta = (decoded_[k] - before[k]) / 2;
          x[k] += delta;
          pre_local_[k] += delta;
        }
        published_.assign(x.begin(), x.end());
      }
    }
    r.bytes.push_back(status);
    encoded_.clear();
    // Dither keyed by the interaction (initiator's round, initiator) and message 1,
    // so it differs from the request's (message 0) and does not depend on timing.
    quantizer_.encode(before, {seed_, round_word, static_cast<std::uint64_t>(initiator), 1}, encoded_);
    r.bytes.insert(r.bytes.end(), encoded_.begin(), encoded_.end());
    comm_.isend(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(r.bytes.data()), r.bytes.size()),
                initiator, kReplyTag, r.request);
  }

  SwarmMode mode_;
  Quantizer quantizer_;
  TopologySpec topology_spec_;
  Comm& comm_;
  std::optional<Topology> topology_;
  bool started_ = false;
  std::uint64_t seed_ = 0;
  int served_failures_ = 0;  // requests this peer could not decode, not yet reported
  std::vector<double> pre_local_, published_, sent_, decoded_;
  std::vector<std::byte> request_, reply_, incoming_, encoded_;
  std::vector<int> alive_;
  std::deque<PendingReply> replies_;
};

}  // namespace

std::unique_ptr<Protocol> make_swarm(const ProtocolOptions& options, Comm& comm) {
  return std::make_unique<SwarmProtocol>(options, comm);
}

}  // namespace avb
