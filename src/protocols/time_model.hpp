// The sequential engine's time column: an α–β estimate of each round on
// scripts/platform.py's default cluster, under SMPI's default network model.
//
// A message crosses the sender's link, the backbone and the receiver's link, so
// its latency is alpha = 2 lat + backbone lat; SMPI scales the latency and the
// bandwidth of a message of m bytes by piecewise factors of m (smpi/lat-factor,
// smpi/bw-factor, SimGrid's defaults). A round is `steps` steps of messages of at
// most m bytes, in each of which the busiest peer moves b bytes and all peers
// together B / steps (B the round's bytes) through the shared backbone:
//   step = lat_factor(m) alpha + max(b / bw, (B / steps) / backbone bw) / bw_factor(m)
// It is an estimate: SMPI (the smpi engine) stays the reference for simulated time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocols/compress.hpp"
#include "protocols/group_allreduce.hpp"

namespace avb {

// The platform the estimate assumes: scripts/platform.py's cluster, one host per
// peer with a private link to a backbone all links share (its defaults here).
struct PlatformModel {
  double link_latency = 50e-6;       // seconds, of one peer's link
  double bandwidth = 125e6;          // bytes/s of one peer's link
  double backbone_latency = 500e-6;  // seconds
  double backbone = 2.25e9;          // bytes/s of the backbone
  double host_speed = 1e9;           // flops/s of every host (computation charged: --compute-flops, --step-flops)

  // A message crosses the sender's link, the backbone and the receiver's link.
  double latency() const { return 2 * link_latency + backbone_latency; }
};

// A round's messages, as its protocol sends them.
struct MessagePattern {
  int steps = 0;         // one after another (a step's messages travel at once)
  double message = 0.0;  // bytes of the largest message
  double busiest = 0.0;  // bytes the busiest peer sends or receives in a step

  // Groups that run side by side: the round takes as long as the slowest.
  void merge(const MessagePattern& other);
};

// The pattern of a butterfly all-reduce among n members of a dim-double vector
// (reduce-scatter, all-gather), its parts encoded by `quantizer` when given, and
// of an all-reduce by `collective`.
MessagePattern butterfly_pattern(int n, std::size_t dim, const Quantizer* quantizer = nullptr);
MessagePattern collective_pattern(Collective collective, int n, std::size_t dim, const Quantizer* quantizer = nullptr);

// A round's estimated duration by cause: the latencies of the links and the
// backbone, and the transfer on the busiest link or on the backbone (whichever
// bounds it), for the estimate's refusals to name the flag that makes it long.
struct RoundTime {
  double link_latency = 0, backbone_latency = 0, link_transfer = 0, backbone_transfer = 0;
  double total() const { return link_latency + backbone_latency + link_transfer + backbone_transfer; }
};
RoundTime round_time(const MessagePattern& pattern, double bytes, const PlatformModel& link = {});

// The round's estimated duration; `bytes`: what all peers sent in it.
double round_seconds(const MessagePattern& pattern, std::uint64_t bytes, const PlatformModel& link = {});

}  // namespace avb
