// The sequential engine's side of a protocol: the same rules as its MPI form, on
// the whole population at once in one process (run/sequential.hpp runs it).
//
// A protocol's sequential form lives in the protocol's own file, next to its MPI
// form, and is reached through its catalog row (ProtocolInfo::sequential). Both
// draw from the same keyed streams, so they compute the same values; tests/ check
// them against each other peer by peer, round by round, and each against its
// theory (its case table's [theory] suites).
//
// The forms are written for speed: the population is one contiguous array, each
// round's buffers are kept between rounds, and groups are formed by counting sort.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "protocols/link_loads.hpp"
#include "protocols/round_report.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"

namespace avb {

struct ProtocolOptions;

// Every peer's vector: peer i's is values[i * dim, (i + 1) * dim).
struct Population {
  Population(int n_peers, int dimension)
      : n(n_peers),
        dim(dimension),
        model_dim(static_cast<std::size_t>(dimension)),
        values(static_cast<std::size_t>(n_peers) * static_cast<std::size_t>(dimension)) {}
  int n;
  int dim;
  // --model-dim: the length a round's bytes and time estimate are charged for;
  // values always have dim coordinates (core/padding.hpp).
  std::size_t model_dim;
  std::vector<double> values;
  std::span<double> peer(int i) { return {values.data() + offset(i), static_cast<std::size_t>(dim)}; }
  std::span<const double> peer(int i) const { return {values.data() + offset(i), static_cast<std::size_t>(dim)}; }

 private:
  std::size_t offset(int i) const { return static_cast<std::size_t>(i) * static_cast<std::size_t>(dim); }
};

// What a round did, summed over the population: its report and the bytes the
// peers sent (the MPI form's are counted by its Comm).
struct RoundEffect : RoundReport {
  std::uint64_t bytes = 0;
};

// One round of the whole population. `alive` holds failures.alive(t, i) for every
// peer, computed once per round by the runner.
struct PopulationRound {
  int t = 0;
  std::uint64_t seed = 0;  // the trial's seed
  const FailureModel& failures;
  std::span<const std::uint8_t> alive;
  // Zeroed by the runner (empty: not wanted). The protocol sets waiting[i] = 1 where
  // its MPI form sets GroupCounters::waited_on_failure for peer i: an alive peer that
  // expected a message from a peer that is down waits for the failure to be detected.
  std::span<std::uint8_t> waiting = {};
  // Set by the runner when a stop (SIGTERM, SIGINT) is requested; null: never.
  const std::atomic<bool>* stop = nullptr;
  // A waiting policy other than `all` (null: none), and every peer's work this
  // round in seconds: the runner fills in each peer's arrival (which the cut reads),
  // and a group protocol then sets its members' as GroupAverager charges them (the
  // late cut short).
  const Arrivals* arrivals = nullptr;
  std::span<double> work = {};
  // Where the protocol charges its messages, by endpoint, for the round's time
  // (null: time not wanted).
  LinkLoads* links = nullptr;

  // A message from `from` to `to`, charged to the round's current phase.
  void send(int from, int to, double bytes) const {
    if (links != nullptr) links->send(from, to, bytes);
  }

  // Called in a protocol's per-peer loops, so that a long round (millions of
  // peers, a complete graph) answers a stop within a fraction of a second. Cheap:
  // one relaxed load every 256 peers. Throws StopRequested (core/error.hpp): the
  // runner drops the round (the population is half updated) and ends the trial.
  void poll(int peer) const {
    if ((peer & 255) == 0) check_stop(stop);
  }

  void wait(int peer) const {
    const auto i = static_cast<std::size_t>(peer);
    if (!waiting.empty() && alive[i]) waiting[i] = 1;
  }
  bool anyone_down() const { return std::find(alive.begin(), alive.end(), std::uint8_t{0}) != alive.end(); }
};

// The graph protocols' rule: every alive peer i with a down peer j != i among
// sources(i) (whom it expects to hear from) waits.
template <class Sources>
void wait_on_silent_sources(const PopulationRound& round, int n_peers, Sources sources) {
  if (round.waiting.empty() || !round.anyone_down()) return;
  for (int i = 0; i < n_peers; ++i) {
    if (!round.alive[static_cast<std::size_t>(i)]) continue;
    for (int j : sources(i))
      if (j != i && !round.alive[static_cast<std::size_t>(j)]) {
        round.wait(i);
        break;
      }
  }
}

class EventPeers;

class SequentialProtocol {
 public:
  virtual ~SequentialProtocol() = default;
  // An asynchronous protocol's peers as events (protocols/event_round.hpp), for a
  // driver other than the averaging round (SGD's local steps); null otherwise.
  virtual EventPeers* event_peers() { return nullptr; }
  // Once per trial, before its first round, with the initial population.
  virtual void begin_trial(const Population& /*x*/, std::uint64_t /*seed*/) {}
  virtual RoundEffect step(Population& x, const PopulationRound& round) = 0;
};

// Makes a protocol's sequential form for one trial, from options resolved for
// n_peers; the catalog row's `sequential` (nullptr: the protocol has none).
using SequentialFactory = std::unique_ptr<SequentialProtocol>(const ProtocolOptions& options, int n_peers);

// Refuses (ConfigError) a protocol without a sequential form, or settings it
// cannot take, without building anything (make_sequential_protocol checks the same).
void check_sequential_form(const ProtocolOptions& options);
std::unique_ptr<SequentialProtocol> make_sequential_protocol(const ProtocolOptions& options, int n_peers);

}  // namespace avb
