// The sequential engine: every peer of an averaging run in one process, each
// protocol in its sequential form (protocols/population.hpp), trials spread over
// threads. The rows are those run_averaging records on an MPI engine, from the
// same keyed streams; only `time` differs: it is the α–β estimate of
// protocols/time_model.hpp plus the computation charged and the failure detections
// waited, not a measurement.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "run/averaging.hpp"
#include "sim/stragglers.hpp"

namespace avb {

// Failure detection (--detection-timeout) on the sequential engine. Each round the
// protocol marks the peers that wait out a failure (PopulationRound::waiting), as
// its MPI form sets GroupCounters::waited_on_failure; each of them waits `timeout`
// after its messages. The estimate's round ends with its slowest peer
// (ComputeClock::slowest); `detection_time` is the trace's column: the most any one
// peer has waited so far.
class DetectionClock {
 public:
  DetectionClock(int n_peers, double timeout);
  // The flags for this round's PopulationRound::waiting, zeroed (empty when the
  // timeout is 0: nothing to charge).
  std::span<std::uint8_t> begin_round();
  // Adds the round's waits to the peers that waited.
  void end_round();
  // This round's flags (after end_round, until the next begin_round).
  std::span<const std::uint8_t> waiting() const { return waiting_; }
  double timeout() const { return timeout_; }
  double detection_time() const { return most_; }

 private:
  double timeout_;
  std::vector<std::uint8_t> waiting_;
  std::vector<double> waited_;  // per peer, added up round by round as the MPI engines do
  double most_ = 0.0;
};

// The sequential engine's charge for computation (--compute-flops a round,
// --step-flops a step): every alive peer works `flops` at the platform's host
// speed, a straggler (sim/stragglers.hpp, the same peers as on the MPI engines)
// `slowdown` times longer, and the estimate's round waits for the slowest of them,
// as SMPI's round ends when its slowest peer does.
class ComputeClock {
 public:
  ComputeClock(std::uint64_t trial_seed, const StragglerSpec& spec, int n_peers, double flops, const Hosts& hosts);
  // Seconds the slowest alive peer computes (0 when nobody is alive).
  double seconds(std::span<const std::uint8_t> alive) const;
  // Seconds peer i computes (a straggler's slowed down).
  double work(int peer) const;
  bool works() const { return flops_ > 0; }
  // Seconds the slowest alive peer takes beside the messages of a round in which it
  // works `steps` times and then, if it waited out a failure, the detection's
  // timeout: a straggler that does not wait may finish before a fast peer that does.
  double slowest(std::span<const std::uint8_t> alive, const DetectionClock& detection, int steps = 1) const;
  // The same from each peer's own `work` seconds (lognormal work per round, or
  // cut by a waiting policy: sim/arrivals.hpp).
  static double slowest_of(std::span<const std::uint8_t> alive, std::span<const double> work,
                           const DetectionClock& detection);

 private:
  // The most `steps` of work plus the wait of the peers `waiting` marks (empty:
  // none) take among the alive peers.
  double latest(std::span<const std::uint8_t> alive, std::span<const std::uint8_t> waiting, double timeout,
                int steps) const;

  const Hosts& hosts_;
  double flops_ = 0.0, slowdown_ = 1.0;
  std::vector<int> stragglers_;  // in peer order; empty without stragglers or work
};

// Runs every trial of `options` (resolved for n_peers) on up to `threads` threads
// (at least 1); the results do not depend on the thread count. On the calling
// thread, the observer receives each trial's rows and then the trial, in trial
// order. When it asks to stop, every trial in flight ends after its current
// round, marked incomplete, and no new trial starts; the first trial cut short is
// the last one reported.
// `link`: the platform the time estimate assumes.
AveragingResult run_averaging_sequential(const AveragingOptions& options, int n_peers, AveragingObserver& observer,
                                         int threads, const PlatformModel& link = {});

// Churn: at the start of round t each joiner takes its donor's values (what
// sim/churn.hpp's load_joiners does across ranks); `donors` is
// FailureModel::donors(t). Returns the bytes moved.
std::uint64_t load_population_joiners(const std::vector<int>& donors, Population& x);
// Those loads, charged to the round `links` holds, before every peer's work (each
// donor sends its vector of `model_dim` doubles to every joiner that chose it);
// the protocol's messages then start a phase of their own.
void charge_loads(const std::vector<int>& donors, std::size_t model_dim, LinkLoads& links);
// The seconds those loads take as a step of their own.
double load_seconds(const std::vector<int>& donors, std::size_t model_dim, LinkLoads& links);

// One trial, as run_averaging_sequential records it; `stop` is polled once per round.
TrialRecord run_sequential_trial(const AveragingOptions& options, int n_peers, int trial,
                                 const std::atomic<bool>* stop = nullptr, const PlatformModel& link = {});

}  // namespace avb
