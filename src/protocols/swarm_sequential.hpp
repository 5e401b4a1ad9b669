// SwarmSGD's averaging on the sequential engine: every peer of the MPI form
// (swarm_protocol.hpp) as events (protocols/event_round.hpp), at the instants its
// deeds take under SMPI: the same draws, the same wire protocol (kBusy, deferral to
// lower ranks, the lattice's kResend and kExact), the same increments, and the same
// rules of when a peer serves: at once while it waits for a reply or in the
// settle barrier, at the end of each idle slice of its Poisson clock, between
// local steps (progress), and not while it works. A request is received only
// when the partner's one listening receive is free, so a second request to a
// busy partner starts moving when the first has been taken (rendezvous, as SMPI
// sends every message under avbench's eager limit of 0).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <memory>
#include <vector>

#include "protocols/event_round.hpp"
#include "protocols/protocol.hpp"
#include "protocols/swarm_protocol.hpp"

namespace avb::swarm {

std::unique_ptr<EventPeers> make_swarm_peers(const ProtocolOptions& options, int n_peers);

// Internal to swarm_sequential.cpp (the initiator) and swarm_sequential_serve.cpp
// (the partner, messages).
inline constexpr int kArrive = 0;  // a message arrives (arg: the message)
inline constexpr int kServe = 1;    // the end of an idle slice at which the peer takes a request
inline constexpr int kIdleEnd = 2;  // the end of the last idle slice
inline constexpr int kReplyTaken = 3;  // the peer is done testing its replies after its own reply came (arg: it)
// MPI_Test's simulated cost under scripts/smpirun.sh (smpi/test): each serve tests.
inline constexpr double kTestSeconds = 1e-7;
inline constexpr std::size_t kHeader = 2 * sizeof(std::uint32_t);

enum class Doing : std::uint8_t { outside, idle, waiting, settling };

// A message's bytes as the MPI form sends them: a header and a payload, kept in
// the message itself when they are short (a request or reply at --dim 1 is), so
// that taking a message touches one cache line, not two.
inline constexpr std::size_t kInlineBytes = 20;
class MessageBytes {
 public:
  void assign(std::span<const std::byte> head, std::span<const std::byte> payload) {
    size_ = static_cast<std::uint32_t>(head.size() + payload.size());
    std::byte* to = inline_.data();
    if (size_ > inline_.size()) {
      heap_.resize(size_);
      to = heap_.data();
    }
    put(to, head);
    put(to + head.size(), payload);
  }
  std::span<const std::byte> view() const { return {size_ > inline_.size() ? heap_.data() : inline_.data(), size_}; }
  std::byte operator[](std::size_t i) const { return view()[i]; }
  std::size_t size() const { return size_; }

 private:
  // A header's 8 bytes, a status byte, a double: without a call to memcpy.
  static void put(std::byte* to, std::span<const std::byte> from) {
    if (from.size() == 8)
      std::memcpy(to, from.data(), 8);
    else if (from.size() == 1)
      *to = from[0];
    else if (!from.empty())
      std::memcpy(to, from.data(), from.size());
  }
  std::uint32_t size_ = 0;
  std::array<std::byte, kInlineBytes> inline_{};
  std::vector<std::byte> heap_;
};

struct alignas(64) Message {
  int from = 0, to = 0;
  int next = -1;  // the next one in the list it waits in (a mailbox, a deferral list)
  bool reply = false;
  MessageBytes bytes;
};

struct List {
  int head = -1, tail = -1;
  bool empty() const { return head < 0; }
};

// What every interaction reads and writes of a peer, in one cache line: at a
// million peers each one it touches is a cache miss. (Widest fields first, so
// that no padding pushes it past 64 bytes.)
struct alignas(64) Peer {
  // When the replies it sent arrive, in the order sent (sent_ records): each
  // serve tests them (MPI_Test, reap_replies) until one has not arrived. The
  // oldest one's time is kept here, which is all most tests read.
  double oldest_reply = 0;
  List replies;
  int matched = -1;      // the request its listening receive holds, moving or arrived
  List mailbox;          // requests sent to it before its receive was free
  List deferred;         // blocking: requests it holds until its own interaction is over
  int t = 0, tick = 0;
  int partner = -1, request = -1;
  LinkEnds links;  // Transit's counters of its link (EventPeers::link_ends)
  Doing doing = Doing::outside;
  std::uint8_t attempt = 0;  // below kMaxAttempts
  bool arrived : 1 = false;  // the request its listening receive holds has arrived and is not handled yet
  bool last_idle : 1 = false;  // the current idle ends the round's step
  bool tried : 1 = false, done : 1 = false, resent : 1 = false;
};
static_assert(sizeof(Peer) == 64);
static_assert(kMaxAttempts <= 255);

// The Poisson clock's state of a peer (--swarm-clock poisson only).
struct Clock {
  double units = 0, gap = 0;  // the clock's time in the round; the gap to the next tick
  // The current idle: from when its slices count, its seconds, how many slices,
  // and the tests of the requests taken on the way (each delays what follows).
  double idle_from = 0, idle_seconds = 0, idle_extra = 0;
  int slices = 0;
};

// The alive peers of a round, ascending, and each peer's place among them in
// O(1) (a bit per peer, and the count before each word), so that drawing a
// partner on the complete graph costs no search.
inline constexpr std::size_t kAliveRounds = 8;  // kept at once (SGD's peers are a few rounds apart at most)
struct AliveSet {
  std::vector<int> peers;
  std::vector<std::uint64_t> bits;
  std::vector<std::uint32_t> before;  // alive peers in the words before each word
  void assign(std::vector<int> alive, int n) {
    peers = std::move(alive);
    bits.assign(static_cast<std::size_t>(n + 63) / 64, 0);
    for (int p : peers) bits[static_cast<std::size_t>(p) / 64] |= std::uint64_t{1} << (p % 64);
    before.resize(bits.size());
    std::uint32_t count = 0;
    for (std::size_t w = 0; w < bits.size(); ++w) {
      before[w] = count;
      count += static_cast<std::uint32_t>(std::popcount(bits[w]));
    }
  }
  // Bytes a peer costs in one round's set.
  static constexpr double kBytesPerPeer = sizeof(int) + (sizeof(std::uint64_t) + sizeof(std::uint32_t)) / 64.0;
  bool has(int p) const { return (bits[static_cast<std::size_t>(p) / 64] >> (p % 64)) & 1; }
  // How many alive peers are below p.
  std::size_t below(int p) const {
    const auto w = static_cast<std::size_t>(p) / 64;
    return before[w] + static_cast<std::size_t>(ones(bits[w] & ((std::uint64_t{1} << (p % 64)) - 1)));
  }
  // std::popcount without the POPCNT instruction (not in the baseline x86-64
  // this builds for) is a call into libgcc; this is a dozen inline operations.
  static int ones(std::uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return static_cast<int>((x * 0x0101010101010101ull) >> 56);
  }
};

// A reply sent, in its sender's list: when it arrives.
struct Sent {
  double arrives = 0;
  int next = -1;
};

// The tables above (messages, sent replies) are kept by index, so that a table
// may grow while its items wait in lists; a used slot goes back to its
// FreeSlots, last out first. (Its own stack: a vector's push_back is not
// inlined, and every message frees a slot or two.)
class FreeSlots {
 public:
  void put(int i) {
    if (n_ == slots_.size()) grow();
    slots_[n_++] = i;
  }
  bool empty() const { return n_ == 0; }
  int take() { return slots_[--n_]; }
  void clear() { n_ = 0; }

 private:
  [[gnu::noinline]] void grow() { slots_.resize(std::max<std::size_t>(64, 2 * slots_.size())); }
  std::vector<int> slots_;
  std::size_t n_ = 0;
};
template <class T>
int take_slot(std::vector<T>& table, FreeSlots& free) {
  if (free.empty()) {
    table.emplace_back();
    return static_cast<int>(table.size()) - 1;
  }
  return free.take();
}
template <class T>
void push(List& list, int i, std::vector<T>& table) {
  table[static_cast<std::size_t>(i)].next = -1;
  if (list.empty())
    list.head = i;
  else
    table[static_cast<std::size_t>(list.tail)].next = i;
  list.tail = i;
}
template <class T>
int pop(List& list, const std::vector<T>& table) {
  const int i = list.head;
  if (i == list.tail) {  // the last one: its record is not read (at a million peers, a cache miss)
    list = List{};
    return i;
  }
  list.head = table[static_cast<std::size_t>(i)].next;
  return i;
}

class SwarmPeers final : public EventPeers {
 public:
  SwarmPeers(const ProtocolOptions& o, int n)
      : mode_(o.swarm.mode), clock_(o.swarm.clock), quantizer_(o.quantizer), topology_spec_(*o.topology), n_(n),
        offered_(n, 2) {}

  void begin_trial(const Population& x, EventContext& context) override {
    context_ = &context;

    topology_.emplace(topology_spec_, n_, context.seed);
    complete_ = topology_spec_.kind == TopologyKind::complete;
    offered_ = Population(x.n, 2 * x.dim);
    for (int p = 0; p < x.n; ++p) offer(x.peer(p), p);
    peers_.assign(static_cast<std::size_t>(n_), Peer{});
    if (clock_ == SwarmClock::poisson) clocks_.assign(static_cast<std::size_t>(n_), Clock{});
    sent_.clear();
    free_sent_.clear();
    messages_.clear();
    free_.clear();
    alive_lists_.clear();
    alive_round_ = -1;
    model_extra_ = sizeof(double) * (x.model_dim - static_cast<std::size_t>(x.dim));
  }
  void step(Population& x, int p, int t) override;
  double progress(Population& x, int p) override {
    copy(x.peer(p), published(p));
    return serve(x, p);
  }
  void settle(Population& x, int p) override {
    at(p).doing = Doing::settling;
    drop_replies(p);  // settle() waits for them all, without tests
    if (at(p).arrived) handle(x, p);
  }
  void leave_settle() override {
    for (Peer& s : peers_) s.doing = Doing::outside;
  }
  void on_join(const Population& x, int p) override { offer(x.peer(p), p); }
  void handle(Population& x, const Event& e) override;
  RoundEffect take_effect() override { return std::exchange(effect_, {}); }
  LinkEndsPlace link_ends() override { return {&peers_.front().links, sizeof(Peer)}; }

 private:
  Peer& at(int p) { return peers_[static_cast<std::size_t>(p)]; }
  Clock& clock(int p) { return clocks_[static_cast<std::size_t>(p)]; }
  // The models p offers, side by side (one cache line at --dim 1): the one its
  // interactions left (pre-local, which blocking mode sends) and the one it last
  // published (which non-blocking mode sends).
  std::span<double> pre_local(int p) { return offered_.peer(p).first(static_cast<std::size_t>(offered_.dim / 2)); }
  std::span<double> published(int p) { return offered_.peer(p).last(static_cast<std::size_t>(offered_.dim / 2)); }
  std::span<const double> reference(int p) {
    return mode_ == SwarmMode::blocking ? pre_local(p) : published(p);
  }
  static void copy(std::span<const double> from, std::span<double> to) {
    if (from.size() == 1)  // --dim 1: no call to memmove
      to[0] = from[0];
    else
      std::copy(from.begin(), from.end(), to.begin());
  }
  // A scratch vector at size d (most calls find it there: no call to resize).
  static void fit(std::vector<double>& v, std::size_t d) {
    if (v.size() != d) v.resize(d);
  }
  void offer(std::span<const double> model, int p) {
    copy(model, pre_local(p));
    copy(model, published(p));
  }
  double now() const { return context_->queue.now(); }

  // The initiator.
  void next_tick(Population& x, int p);
  void idle_serving(Population& x, int p, double units, bool last);
  static double slice_end(const Clock& s, int k) {
    return s.idle_from + std::min(k * kIdleSlice, s.idle_seconds) + (k - 1) * kTestSeconds + s.idle_extra;
  }
  void serve_at_next_slice(int p);
  void idle_over(Population& x, int p);
  void initiate(Population& x, int p, int tick);
  void next_attempt(Population& x, int p);
  const AliveSet& alive_set(int t);
  int choose_partner(int p, int t, int draw);
  void send_request(Population& x, int p, bool exact, bool with_model);
  void on_reply(Population& x, int p, int reply);
  bool decode_reply(const Message& reply, std::span<const double> near);
  void apply(Population& x, int p, std::byte status, const Message& reply);
  void attempt_over(Population& x, int p, std::byte status);
  void finish_initiate(Population& x, int p);

  // The partner.
  double serve(Population& x, int p);
  double reap_replies(int p);
  void drop_replies(int p);
  void handle(Population& x, int p);
  void answer(Population& x, int q, int request);
  void reply(int q, int request, std::byte status, std::span<const std::byte> payload);

  // Messages.
  int new_message(int from, int to, bool is_reply);
  void release(int m) { free_.put(m); }
  void post(int m);   // a request: moves once the receiver's listening receive is free
  double start(int m);  // moves from now; returns when it arrives

  const SwarmMode mode_;
  const SwarmClock clock_;
  const Quantizer quantizer_;
  const Quantizer exact_{QuantizerSpec{}};
  const TopologySpec topology_spec_;
  const int n_;
  EventContext* context_ = nullptr;
  std::optional<Topology> topology_;
  bool complete_ = false;
  Population offered_;
  std::vector<Peer> peers_;
  std::vector<Clock> clocks_;
  std::vector<Sent> sent_;
  FreeSlots free_sent_;
  std::vector<Message> messages_;
  FreeSlots free_;
  std::unordered_map<int, AliveSet> alive_lists_;  // the alive peers of a round (alive_set)
  int alive_round_ = -1;                           // ... the last one asked for
  const AliveSet* alive_ = nullptr;
  std::vector<int> candidates_;
  std::vector<double> before_, seen_, decoded_, own_view_;
  std::vector<std::byte> encoded_;
  std::size_t model_extra_ = 0;
  RoundEffect effect_;
};


}  // namespace avb::swarm
