// The run skeleton shared by averaging (run/averaging.cpp) and training
// (sgd/trainer.cpp): the loop over trials and each trial's set-up. What happens
// inside a trial (rounds of a protocol, or SGD steps with rounds between them)
// is the caller's.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <mpi.h>

#include "core/comm.hpp"
#include "core/watch.hpp"
#include "protocols/protocol.hpp"
#include "run/options.hpp"
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"

namespace avb {

// One trial: its seed, its own duplicate of the world (made under the watch, so
// that a peer stopped between trials cannot escape --round-timeout), its failures
// and stragglers, and a fresh protocol. `unit` names the watch's steps ("round"
// or "step"); the watch is started at index 0 of trial `index`.
class Trial {
 public:
  Trial(const RunOptions& options, MPI_Comm world, Watch& watch, int index, const char* unit);

  const int index;
  const std::uint64_t seed;
  Comm comm;
  const int me;  // this peer's rank
  const int n;   // peers
  FailureModel failures;
  const Stragglers stragglers;
  std::unique_ptr<Protocol> protocol;
  double detection = 0.0;  // this peer's failure-detection time, cumulative

  // After a round in which this peer waited on a failed peer: the failure is
  // noticed only after the timeout, simulated time under SMPI and a modelled
  // column everywhere (never a real sleep).
  void charge_detection(const GroupCounters& counters, double timeout);

  // Rank 0: a measured row's cumulative time (adding the interval's `seconds`)
  // and the peers alive in `round` (all of them before the first).
  template <class Row>
  void stamp(Row& row, int round, double seconds) {
    elapsed_ += seconds;
    row.time = elapsed_;
    row.alive = round == 0 ? n : failures.count_alive(round);
  }

 private:
  double elapsed_ = 0.0;
};

// Runs the trials of a run: `body(trial, record)` runs one trial, fills the
// record's rows, targets and flags, and returns whether a stop request was seen;
// the run stops after that trial. Rank 0 hands each record to the observer's
// on_trial and keeps it in `records`. Returns whether the run was stopped.
template <class Record, class Observer, class Body>
bool run_trials(const RunOptions& options, MPI_Comm world, Watch& watch, const char* unit, Observer& observer,
                std::vector<Record>& records, Body&& body) {
  bool stopped = false;
  for (int k = 0; k < options.trials && !stopped; ++k) {
    Trial trial(options, world, watch, k, unit);
    Record record;
    record.index = k;
    record.seed = trial.seed;
    stopped = body(trial, record);
    if (trial.me == 0) {
      observer.on_trial(record);
      if (!observer.keeps_records()) records.clear();
      records.push_back(std::move(record));
    }
  }
  return stopped;
}

// The number of peers of `world`.
int world_size(MPI_Comm world);

}  // namespace avb
