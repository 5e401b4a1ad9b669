// What a run reports as it goes and returns at the end, for averaging
// (run/averaging.hpp) and training (sgd/trainer.hpp) alike.
#pragma once

#include <vector>

namespace avb {

// Called on rank 0 as results arrive: a row per measurement (a round of
// averaging, an evaluation of SGD), then the whole trial. stop_requested() is
// polled on every rank once per row and the answers are combined, so all ranks
// stop together.
template <class Trial, class Row>
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  virtual void on_row(const Trial& /*trial*/, const Row& /*row*/) {}
  virtual void on_trial(const Trial& /*trial*/) {}
  virtual bool stop_requested() { return false; }
  // The sequential engine, while its trials run on threads: the work done so far
  // by every trial, reported or not (rounds of averaging, SGD steps).
  virtual void on_progress(long long /*work_done*/) {}
  // Whether the run's result keeps every trial (a library caller's, tests') or
  // only the last one (the programs' reporters, which see each trial in on_trial):
  // then memory does not grow with the number of trials.
  virtual bool keeps_records() const { return true; }
};

template <class Trial>
struct RunResult {
  std::vector<Trial> trials;  // rank 0 only; the last may be incomplete (only the last: see keeps_records)
  bool stopped = false;       // a stop request cut the run short (all ranks)
};

}  // namespace avb
