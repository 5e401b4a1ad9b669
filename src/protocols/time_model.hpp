// The sequential engine's time column: an α–β estimate of each round on
// scripts/platform.py's default cluster, under SMPI's default network model.
//
// A message crosses the sender's link, the backbone and the receiver's link, so
// its latency is alpha = 2 lat + backbone lat; SMPI scales the latency and the
// bandwidth of a message of m bytes by piecewise factors of m (smpi/lat-factor,
// smpi/bw-factor, SimGrid's defaults). A step in which the busiest peer moves b
// bytes in messages of m bytes costs
//   step(m, b) = lat_factor(m) alpha + b / (bw_factor(m) bw)
// and a round costs the sum of its protocol's steps, for the slowest group. It is
// an estimate: SMPI (the smpi engine) stays the reference for simulated time.
#pragma once

#include <cstddef>

#include "protocols/group_allreduce.hpp"

namespace avb {

// The platform the estimate assumes (platform.py's cluster defaults).
struct LinkModel {
  double latency = 2 * 50e-6 + 500e-6;  // seconds, end to end
  double bandwidth = 125e6;             // bytes/s of one peer's link
};

// One step: the busiest peer moves `bytes` in messages of `message` bytes.
double step_seconds(double message, double bytes, const LinkModel& link = {});

// A butterfly all-reduce among n members of a dim-double vector: reduce-scatter
// and all-gather, two steps.
double butterfly_seconds(int n, int dim, const LinkModel& link = {});

// An all-reduce among n peers by `collective` (group_allreduce.hpp).
double collective_seconds(Collective collective, int n, std::size_t dim, const LinkModel& link = {});

}  // namespace avb
