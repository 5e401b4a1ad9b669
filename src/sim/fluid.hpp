// Flows sharing links, as SimGrid's network model shares them: a fluid (flow-
// level) simulation of a round's messages when it has few enough of them
// (protocols/link_loads.hpp).
//
// A flow is released at its `start`, or once every flow it comes `after` has
// ended (each plus its lag), whichever is later; it then waits out its latency,
// then moves its bytes at a rate that the links on its route share among their
// flows by weighted max-min fairness (SimGrid's lmm): a flow's share is inversely
// proportional to its penalty (its route's latency plus weight-S over each link's
// bandwidth, so a long route yields to short ones), no flow beyond its bound (the
// slowest link of its route and the TCP window over twice its latency), and a
// flow also uses 5% of its rate on the links of its way back (acknowledgements).
// Its bytes progress at its rate times its bandwidth factor. Rates are solved
// anew whenever a flow starts moving or ends.
#pragma once

#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include "sim/fluid_memo.hpp"

namespace avb {

class FluidNetwork {
 public:
  // A link of `capacity` bytes/s; returns its index.
  int add_link(double capacity);
  struct Flow {
    double start = 0;  // seconds from the run's start until it may begin
    double bytes = 0;
    double latency = 0;  // seconds before it moves (SMPI's latency factor applied)
    double bound = 0;    // bytes/s it never exceeds
    double penalty = 1;  // its share of a link is proportional to 1 / penalty
    double factor = 1;   // bytes progress at rate x factor
    std::vector<int> route, back;  // links it uses fully, and at 5%
    // Flows (indices of flows added before it) that must end first, each with the
    // seconds that follow its end before this one may begin (a peer's work).
    std::vector<std::pair<int, double>> after;
  };
  // Returns the flow's index in this run.
  int add_flow(Flow flow);
  std::size_t flows() const { return flows_.size(); }
  // Simulates the flows added since the last run: returns the time at which the
  // last one ends, and keeps each one's end (end(f), f in the order added) until
  // the next run. The links stay. Polls `stop` (null: never) and throws
  // StopRequested (core/error.hpp) once it is set: a round of 100,000 flows takes
  // seconds. With a `memo`, a run whose flows and links it has seen is looked
  // up rather than simulated, and a new one is added to it.
  double run(const std::atomic<bool>* stop = nullptr, FluidMemo* memo = nullptr);
  double end(std::size_t flow) const { return end_[flow]; }

 private:
  void clear();
  FluidMemo::Key memo_key() const;
  double simulate(const std::atomic<bool>* stop);
  void prepare();
  std::size_t settle(double now);
  void release(std::size_t f, double at);
  void gather();
  void solve();

  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  // Per flow: bytes left, current rate, when it may move (start and latency),
  // when it ended; how many of the flows it comes after are still to end.
  std::vector<double> left_, rate_, moves_, end_;
  std::vector<int> waiting_for_;
  std::vector<std::vector<std::pair<int, double>>> followers_;  // per flow: those that come after it, with their lags
  std::vector<char> fixed_;
  // The flows released but not moving yet, and those moving.
  std::vector<int> released_, moving_;
  // Per link: capacity left, the unfixed flows' weights (usage / penalty), and
  // how many unfixed flows use it.
  std::vector<double> room_, weight_;
  std::vector<int> active_;
  // The links the moving flows use, and per link those flows (solve's).
  std::vector<int> links_;
  std::vector<std::vector<int>> users_;
};

}  // namespace avb
