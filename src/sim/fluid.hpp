// Flows sharing links, as SimGrid's network model shares them: a fluid (flow-
// level) simulation of messages, for the time of one phase of a round when it has
// few enough messages (protocols/link_loads.hpp).
//
// A flow starts when both its ends are ready (its `start`), waits out its latency, then moves its bytes at a rate that the links on
// its route share among their flows by weighted max-min fairness (SimGrid's lmm):
// a flow's share is inversely proportional to its penalty (its route's latency
// plus weight-S over each link's bandwidth, so a long route yields to short ones),
// no flow beyond its bound (the slowest link of its route and the TCP window over
// twice its latency), and a flow also uses 5% of its rate on the links of its way
// back (acknowledgements). Its bytes progress at its rate times its bandwidth
// factor. Rates are solved anew whenever a flow starts moving or ends.
#pragma once

#include <cstddef>
#include <vector>

namespace avb {

class FluidNetwork {
 public:
  // A link of `capacity` bytes/s; returns its index.
  int add_link(double capacity);
  struct Flow {
    double start = 0;  // seconds from the phase's start until it may begin
    double bytes = 0;
    double latency = 0;  // seconds before it moves (SMPI's latency factor applied)
    double bound = 0;    // bytes/s it never exceeds
    double penalty = 1;  // its share of a link is proportional to 1 / penalty
    double factor = 1;   // bytes progress at rate x factor
    std::vector<int> route, back;  // links it uses fully, and at 5%
  };
  void add_flow(Flow flow);
  std::size_t flows() const { return flows_.size(); }
  // Simulates the flows added since the last run: returns the time at which the
  // last one ends, and keeps each one's end (end(f), f in the order added) until
  // the next run. The links stay.
  double run();
  double end(std::size_t flow) const { return end_[flow]; }

 private:
  void clear();
  void solve();

  std::vector<double> capacity_;
  std::vector<Flow> flows_;
  // Per flow: bytes left, current rate, moving (latency paid), done.
  std::vector<double> left_, rate_, end_;
  std::vector<char> moving_, done_, fixed_;
  // Per link: capacity left, the unfixed flows' weights (usage / penalty), and
  // how many unfixed flows use it.
  std::vector<double> room_, weight_;
  std::vector<int> active_;
  std::vector<std::vector<std::pair<int, double>>> users_;  // per link: (flow, usage)
};

}  // namespace avb
