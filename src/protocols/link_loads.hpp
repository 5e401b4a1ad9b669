// The sequential engine's time column, message by message: each round's messages
// by their endpoints, charged to the links of the platform they cross.
//
// A message from peer a to peer b crosses a's link (up), the backbone of a's
// region, and b's link (down); between regions of geo also the wide-area link of
// the pair and b's backbone. A round is a sequence of phases, a phase a set of
// messages that travel at once (a gossip round, a butterfly's reduce-scatter, one
// step of a ring). Under SMPI's sharing of links among flows a phase lasts about
// as long as its busiest link needs for what crosses it:
//   phase = lat_factor(m) latency + ack max_l(bytes_l / bandwidth_l) / bw_factor(m)
// with m its largest message, latency that of its longest route, and l every
// host's link (the larger of what it sends and receives: links are split-duplex),
// every backbone and every wide-area link (both directions share them), or as long
// as its largest message needs under the TCP window of its route, when that is
// longer (kTcpWindow).
// Following the endpoints is what makes a slow host slow only for those who talk
// to it, and a protocol that keeps its messages inside a region free of the
// wide-area link. A phase of at most kFluidMessages messages is simulated flow by
// flow instead (sim/fluid.hpp), as SimGrid shares links: unequally, a flow across
// regions yielding to local ones.
//
// Each peer keeps its own clock through the round, as each MPI rank does: it starts
// when its work is done (start_round's `ready`), a message moves once both its ends
// are ready, and a peer that waits out a failure's detection does so after its own
// messages (finish_round). So a straggler delays only those who talk to it, and a
// wait overlaps the messages of others. A phase simulated flow by flow advances the
// clocks of its peers only, each to the end of its last message; a phase repeated
// k times (a ring's steps, a butterfly's two halves) advances the peers it joins
// together, k - 1 more times its time when all start at once. A phase charged by
// the busiest-link bound advances every clock by that bound.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "collectives/group_allreduce.hpp"
#include "protocols/time_model.hpp"
#include "sim/fluid.hpp"

namespace avb {

class Quantizer;

class LinkLoads {
 public:
  // hosts: the platform's first n_peers hosts (it keeps a reference).
  // `stop` (null: never): polled while a round is simulated flow by flow, which
  // throws StopRequested (core/error.hpp) once it is set. `memo` (null: none):
  // where the rounds simulated flow by flow are kept and looked up, for the
  // trials of a run to share (sim/fluid_memo.hpp).
  LinkLoads(const Hosts& hosts, int n_peers, const std::atomic<bool>* stop = nullptr, FluidMemo* memo = nullptr);

  // Seconds from the round's start at which peer i is ready to send (its work; may
  // be negative when the round's start is the slowest peer's end of work). Unset or
  // null: every peer at 0.
  using Ready = std::function<double(int)>;
  void start_round(Ready ready);
  // Ends the round; returns its seconds: until its last peer is done with its
  // messages and then, if waiting[i] (empty: none), its `timeout`. `alone` is the
  // most any alive peer's ready time plus its wait comes to: it stands for every peer
  // whose clock no simulated phase moved.
  double finish_round(double alone, std::span<const std::uint8_t> waiting = {}, double timeout = 0.0);
  // finish_round(0) of a round started with every peer ready at 0.
  double take_seconds();
  // An asynchronous protocol's round, run as events on its own clocks
  // (protocols/event_round.hpp): it lasts at least until `seconds` from its start.
  void ends_by(double seconds) { ends_by_ = std::max(ends_by_, seconds); }
  // Seconds from the round's start at which peer i is ready (start_round's).
  double ready(int peer) const { return ready_ ? ready_(peer) : 0.0; }
  const Hosts& hosts() const { return hosts_; }
  // Starts a phase whose messages go before every peer's work (a churn's joiners
  // loading their state): they start with the round, and a peer's work follows
  // its last. The round's first phase only.
  void before_work();

  // Starts the round's next phase: the messages sent until the next call travel
  // at once, and `repeats` phases like it follow one another (a ring's 2(n - 1)
  // steps, a butterfly's reduce-scatter and all-gather). A round starts with a
  // phase of 1.
  void phase(int repeats = 1);
  // `pieces`: the message travels as that many equal messages at once (a ring's
  // segments), each with its own TCP window.
  void send(int from, int to, double bytes, double pieces = 1);
  // A butterfly all-reduce's step: members[k] reduces a part of parts[k] bytes,
  // which every other member sends it (the reduce-scatter); the all-gather, its
  // mirror image, loads every link alike.
  void butterfly(std::span<const int> members, std::span<const double> parts);
  // One all-reduce among `members` (in rank order) of a dim-double vector, its
  // messages encoded by `quantizer` when given: its phases, as the collective
  // sends them (collectives/group_allreduce.hpp).
  void collective(Collective c, std::span<const int> members, std::size_t dim, const Quantizer* quantizer = nullptr);

  // The bytes it holds for n peers on `platform`, whose largest message is
  // `message` bytes.
  static double bytes(const PlatformModel& platform, int n_peers, double message);
  // Whether a message of that many bytes may be simulated flow by flow there (the
  // rest is charged by the bound, and needs no memory beyond the loads).
  static bool may_simulate(const PlatformModel& platform, double message);
  // The messages of a round of that pattern among n peers (some of whom may fail
  // in a round: `peers_fail`) that are simulated flow by flow, and how many of
  // them move at once (a step's): what the simulation's wall time grows with, at
  // most (a tree's steps each move fewer). {0, 0} when the bound charges them all.
  struct Simulated {
    double messages = 0, at_once = 0;
  };
  static Simulated simulated(const PlatformModel& platform, const MessagePattern& pattern, int n_peers,
                             bool peers_fail = false);

 private:
  void close_phase();
  int region(int peer) const;
  void load_host(int peer, double out, double in);
  void load_backbone(int region, double bytes);
  void load_wan(int a, int b, double bytes);
  // A message of `bytes` in `pieces` from region a to region b.
  void note_message(double bytes, int a, int b, double pieces = 1);
  void record(int from, int to, double bytes, double pieces);
  // Simulates the open phase's messages; advances the clocks of their peers.
  void fluid_phase();
  void simulate_pending();
  struct Message {
    int from, to;
    double bytes, pieces;
  };
  std::vector<FluidNetwork::Flow> fluid_flows(FluidNetwork& net, std::span<const Message> messages) const;
  void repeat_together(std::span<const std::size_t> ends, std::span<const double> alone, std::vector<double>& done) const;
  double clock(int peer) const;

  const Hosts& hosts_;
  const PlatformModel& platform_;
  const std::atomic<bool>* stop_;
  FluidMemo* memo_;
  std::int64_t n_;
  int regions_;
  // Bytes a host sends and receives in the open phase (float: a time estimate),
  // and the hosts and regions it touched (to clear them).
  std::vector<float> out_, in_;
  std::vector<int> touched_hosts_;  // the first touched_ of n entries
  std::size_t touched_ = 0;
  std::vector<int> touched_regions_;
  bool alike_;         // every host has the platform's bandwidth
  float most_loaded_ = 0.0F;  // then: the most a host sends or receives in the open phase
  std::vector<double> backbone_;
  std::vector<double> wan_;                            // by wide-area link, when there are few
  std::unordered_map<std::int64_t, double> wan_map_;  // otherwise
  std::vector<std::pair<int, double>> by_region_;  // (region, part) of a butterfly's members
  std::vector<double> parts_;
  std::vector<std::size_t> receivers_;  // a butterfly's members with a part
  struct Share {  // a butterfly's members in one region, and the bytes of the parts they reduce
    int region;
    double members, bytes;
  };
  std::vector<Share> shares_;
  // The open phase: its repeats, largest message, longest route's latency, whether
  // a message leaves its region, and the seconds its busiest link needs.
  int repeats_ = 1;
  double message_ = 0.0;
  double latency_ = 0.0;
  bool crosses_ = false;
  double busiest_ = 0.0;
  double windowed_ = 0.0;  // seconds of the message the TCP window holds back most
  // The round's clocks: peer i's is ahead_[i] once a simulated phase moved it, else
  // ready_(i) + every_ (the bound-charged phases' seconds, which every peer pays).
  Ready ready_;
  bool before_work_ = false;  // the open phase goes before the work
  double every_ = 0.0;
  double ends_by_ = 0.0;
  std::unordered_map<int, double> ahead_;
  // The open phase's messages one by one, while there are few enough for a fluid
  // simulation of their sharing (sim/fluid.hpp); beyond that the busiest link's
  // bound above stands alone.
  std::vector<Message> messages_;
  // The round's phases simulated so far, not yet run: each message with its phase
  // (a repeat counts as one) and whether it goes before the work.
  struct Staged {
    Message message;
    int stage;
    bool before_work;
  };
  std::vector<Staged> pending_;
  int stage_ = 0;
  bool too_many_ = false;
};

}  // namespace avb
