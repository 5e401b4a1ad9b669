// Asynchronous protocols on the sequential engine: each peer's deeds as events in
// simulated time (sim/event_queue.hpp), at the instants its MPI form would do them
// under SMPI, so that who meets whom, and who is busy when, follows the same
// clocks.
//
// A protocol plugs in as EventPeers: the driver starts each peer's step() once
// the peer is ready (its work done), the protocol sends its messages through
// Transit (protocols/transit.hpp), schedules their arrivals and its own timers in
// the queue, reacts to them in handle(), and calls the driver's step_done(peer)
// where its MPI form's step() returns. The driver then has the peer settle() (the
// MPI runners' barrier before each measurement, during which a peer still serves)
// and, once no event is left, ends the round when the barrier would.
//
// EventRound is the averaging runner's driver (a SequentialProtocol like any
// other); sgd/sequential_swarm.cpp drives the same peers between local steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "protocols/population.hpp"
#include "protocols/transit.hpp"
#include "sim/event_queue.hpp"
#include "sim/failures.hpp"

namespace avb {

// What the peers of an asynchronous protocol share with their driver.
struct EventContext {
  EventQueue queue;
  std::optional<Transit> transit;
  const FailureModel* failures = nullptr;
  std::uint64_t seed = 0;
  std::function<void(int peer)> step_done;
  std::uint64_t bytes = 0;  // charged by the peers' messages since the driver last took them
};

class EventPeers {
 public:
  virtual ~EventPeers() = default;
  // Once per trial, with the initial population.
  virtual void begin_trial(const Population& x, EventContext& context) = 0;
  // Peer p's step() of round t begins at the queue's now.
  virtual void step(Population& x, int p, int t) = 0;
  // Between two local steps of p (SGD): p publishes its model and serves.
  // Returns the simulated seconds that takes (MPI_Test's under SMPI).
  virtual double progress(Population& /*x*/, int /*p*/) { return 0.0; }
  // p waits at the settle barrier from now on, serving whoever asks.
  virtual void settle(Population& x, int p) = 0;
  // The barrier is over: every peer goes back to its own work (serving only
  // where its protocol says).
  virtual void leave_settle() = 0;
  // Churn: p took a live peer's values.
  virtual void on_join(const Population& /*x*/, int /*p*/) {}
  // An event the peers scheduled (their kinds are >= 0; the drivers use negative ones).
  virtual void handle(Population& x, const Event& e) = 0;
  // The counters since the last call (bytes are the context's).
  virtual RoundEffect take_effect() = 0;
  // Where Transit keeps each peer's link counters (none: its own array). Asked
  // by the driver before each round, when no message moves.
  virtual LinkEndsPlace link_ends() { return {}; }
};

// Each peer's start in a round, in seconds from the last peer's (<= 0): the
// runners' measurement ends with a binomial broadcast of `bytes` in synchronous
// sends (run/stats.hpp, core/reduce.cpp), so a peer starts once it has received the
// verdict and passed it on to its own children, one after the other.
std::vector<double> broadcast_starts(const Transit& transit, int n, double bytes);

// When the last peer leaves the settle barrier (swarm_serve.cpp's dissemination
// barrier of empty messages, each sent when both ends have reached its step), each
// peer entering it at entries[i].
double barrier_end(std::span<const double> entries, const Transit& transit);
// The same, token by token (what barrier_end does on a platform of many regions).
double barrier_end_by_steps(std::span<const double> entries, const Transit& transit);

// The averaging runner's driver: one round of every peer as events, timed from
// each peer's start (broadcast_starts plus its work, LinkLoads::ready) to the
// barrier's end, which the round's LinkLoads is told (ends_by).
class EventRound final : public SequentialProtocol {
 public:
  explicit EventRound(std::unique_ptr<EventPeers> peers) : peers_(std::move(peers)) {}
  EventPeers* event_peers() override { return peers_.get(); }
  void begin_trial(const Population& x, std::uint64_t seed) override;
  RoundEffect step(Population& x, const PopulationRound& round) override;

 private:
  static constexpr int kStart = -1;  // a peer's step() begins
  std::unique_ptr<EventPeers> peers_;
  EventContext context_;
  void load_joiners(const Population& x, const PopulationRound& round);
  std::vector<double> starts_, begins_, entries_;
  Population* x_ = nullptr;
};

}  // namespace avb
