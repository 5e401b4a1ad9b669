// The sequential engine: every peer of an averaging run in one process, each
// protocol in its sequential form (protocols/sequential.hpp), trials spread over
// threads. The rows are those run_averaging records on an MPI engine, from the
// same keyed streams; only `time` differs: it is the α–β estimate of
// protocols/time_model.hpp plus the failure detections waited, not a measurement.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "protocols/sequential.hpp"
#include "protocols/time_model.hpp"
#include "run/averaging.hpp"

namespace avb {

// Failure detection (--detection-timeout) on the sequential engine. Each round the
// protocol marks the peers that wait out a failure (PopulationRound::waiting), as
// its MPI form sets GroupCounters::waited_on_failure; each of them waits `timeout`
// after its messages. The estimate's round ends with its slowest peer, so it takes
// `timeout` longer when anyone waits; `detection_time` is the trace's column: the
// most any one peer has waited so far.
class DetectionClock {
 public:
  DetectionClock(int n_peers, double timeout);
  // The flags for this round's PopulationRound::waiting, zeroed (empty when the
  // timeout is 0: nothing to charge).
  std::span<std::uint8_t> begin_round();
  // Seconds the round takes beyond its messages' estimate.
  double end_round();
  double detection_time() const { return most_; }

 private:
  double timeout_;
  std::vector<std::uint8_t> waiting_;
  std::vector<double> waited_;  // per peer, added up round by round as the MPI engines do
  double most_ = 0.0;
};

// Runs every trial of `options` (resolved for n_peers) on up to `threads` threads
// (at least 1); the results do not depend on the thread count. On the calling
// thread, the observer receives each trial's rows and then the trial, in trial
// order. When it asks to stop, every trial in flight ends after its current
// round, marked incomplete, and no new trial starts; the first trial cut short is
// the last one reported.
// `link`: the platform the time estimate assumes.
AveragingResult run_averaging_sequential(const AveragingOptions& options, int n_peers, AveragingObserver& observer,
                                         int threads, const LinkModel& link = {});

// Churn: at the start of round t each joiner takes its donor's values (what
// sim/churn.hpp's load_joiners does across ranks); `donors` is
// FailureModel::donors(t). Returns the bytes moved.
std::uint64_t load_population_joiners(const std::vector<int>& donors, Population& x);

// One trial, as run_averaging_sequential records it; `stop` is polled once per round.
TrialRecord run_sequential_trial(const AveragingOptions& options, int n_peers, int trial,
                                 const std::atomic<bool>* stop = nullptr, const LinkModel& link = {});

}  // namespace avb
