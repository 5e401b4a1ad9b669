// Local SGD with an asynchronous protocol on the sequential engine: every peer's
// steps between two evaluations as events (protocols/event_round.hpp), as the MPI
// trainer runs them (sgd/trainer.hpp): a step's gradient, its computation on the
// peer's host, progress() (the peer publishes its model and serves), and after its
// local steps (H, or geometric with mean H) its round, whose interactions take
// their simulated time before its next step begins. At the evaluation every peer
// settles; the interval lasts until the barrier's end from the last peer's start.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "protocols/event_round.hpp"
#include "sgd/trainer.hpp"

namespace avb {

class ComputeClock;

class EventSgd {
 public:
  // `work(i)`: seconds peer i's step computes (0: none).
  EventSgd(const TrainingOptions& options, EventPeers& peers, const FailureModel& failures, std::uint64_t seed,
           int n_peers, std::function<double(int)> work);
  void begin_trial(const Population& x);

  struct Interval {
    double seconds = 0;
    RoundEffect effect;
    int rounds_done = 0;  // peer 0's, as the MPI trainer's rank 0 records it
  };
  // Steps [from, to) of every peer; `gradient(i, s)` applies peer i's step s to
  // its model in x (its momentum is the caller's). `hosts`: the platform's.
  Interval run(Population& x, int from, int to, const Hosts& hosts, const std::function<void(int, int)>& gradient,
               const std::atomic<bool>* stop);

 private:
  void next_step(int p);
  void step_over(int p);
  void progressed(int p);
  void round_over(int p);

  const TrainingOptions& o_;
  EventPeers& peers_;
  std::function<double(int)> work_;
  int n_;
  EventContext context_;
  Population* x_ = nullptr;
  const std::function<void(int, int)>* gradient_ = nullptr;
  int to_ = 0;
  // Per peer: its next round, the steps it took towards it and needs, its next step.
  std::vector<int> round_, since_, until_, step_;
  std::vector<double> starts_, entries_;
};

}  // namespace avb
