// The sequential engine: every peer of an averaging run in one process, each
// protocol in its sequential form (protocols/sequential.hpp), trials spread over
// threads. The rows are those run_averaging records on an MPI engine, from the
// same keyed streams; only `time` differs: it is the α–β estimate of
// protocols/time_model.hpp, not a measurement.
#pragma once

#include <atomic>

#include "protocols/sequential.hpp"
#include "run/averaging.hpp"

namespace avb {

// Runs every trial of `options` (resolved for n_peers) on up to `threads` threads
// (at least 1); the results do not depend on the thread count. On the calling
// thread, the observer receives each trial's rows and then the trial, in trial
// order. When it asks to stop, every trial in flight ends after its current
// round, marked incomplete, and no new trial starts; the first trial cut short is
// the last one reported.
AveragingResult run_averaging_sequential(const AveragingOptions& options, int n_peers, AveragingObserver& observer,
                                         int threads);

// Churn: at the start of round t each joiner takes its donor's values (what
// sim/churn.hpp's load_joiners does across ranks); returns the bytes moved.
std::uint64_t load_population_joiners(const FailureModel& failures, int t, Population& x);

// One trial, as run_averaging_sequential records it; `stop` is polled once per round.
TrialRecord run_sequential_trial(const AveragingOptions& options, int n_peers, int trial,
                                 const std::atomic<bool>* stop = nullptr);

}  // namespace avb
