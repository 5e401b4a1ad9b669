// The sequential engine of training: every peer of sgd_bench's local SGD
// (sgd/trainer.hpp) in one process, each protocol in its sequential form
// (protocols/population.hpp), trials spread over threads.
//
// The loop is the trainer's, peer by peer, with the same gradient calls, keyed
// streams and order of operations, and the measurement sums in the MPI engines'
// tree order: the rows and models are those of run_training on Open MPI, bit for
// bit (an all-reduce's excepted, which sums along a ring or a tree there). Only
// time differs: `time` is the α–β estimate of the averaging rounds
// (protocols/time_model.hpp), each step's --step-flops at its host's speed
// (ComputeClock) and the failure detections waited (run/sequential.hpp's
// DetectionClock).
//
// An asynchronous protocol (swarm) runs as events between evaluations
// (sgd/event_sgd.hpp): its peers step at their own pace, and its rows equal SMPI's
// where the order of events does (docs/simulation.md, "Asynchronous protocols").
// Churn is modelled: a joiner loads its donor's model at the start of the steps
// that lead to its first round and starts with no momentum, as in the trainer.
#pragma once

#include <atomic>

#include "protocols/population.hpp"
#include "sgd/trainer.hpp"

namespace avb {

// One trial as run_training_sequential records it, and every peer's final model.
struct PopulationTrial {
  TrainingTrial record;
  Population models;
};

// Trial `trial` of `options` (resolved for n_peers) on `problem`
// (build_problem_sequential's); `stop` is polled at every evaluation.
PopulationTrial run_training_sequential_trial(const TrainingOptions& options, const Problem& problem, int n_peers,
                                              int trial, const std::atomic<bool>* stop = nullptr,
                                              const PlatformModel& link = {});

// Runs every trial on up to `threads` threads (at least 1); threads beyond the
// trials in flight share their local steps when a step is heavy (an MLP's). The
// results do not depend on the thread count. On the calling thread, the observer receives each
// trial's rows and then the trial, in trial order; when it asks to stop, every
// trial in flight ends at its next evaluation, marked incomplete, and no new
// trial starts. `model` is peer 0's at the end of the last trial. `link`: the
// platform the time estimate assumes.
TrainingResult run_training_sequential(const TrainingOptions& options, const Problem& problem, int n_peers,
                                       TrainingObserver& observer, int threads, const PlatformModel& link = {});

}  // namespace avb
