// The platform a run simulates (hosts, links, backbones, regions), SMPI's network
// factors, and the estimate of a round's time before a run starts: its message
// pattern (steps, largest message, busiest peer's bytes) and all bytes through the
// shared backbone, an upper bound the run's resource check uses. The sequential
// engine's time column follows each message instead (protocols/link_loads.hpp).
//
// A message crosses the sender's link, the backbone and the receiver's link, so
// its latency is alpha = 2 lat + backbone lat; SMPI scales the latency and the
// bandwidth of a message of m bytes by piecewise factors of m (smpi/lat-factor,
// smpi/bw-factor, SimGrid's defaults):
//   step = lat_factor(m) alpha + max(b / bw, (B / steps) / backbone bw) / bw_factor(m)
// SMPI (the smpi engine) stays the reference for simulated time.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "codecs/compress.hpp"
#include "collectives/group_allreduce.hpp"

namespace avb {

// A platform file's regions (apps/common/platform_file.hpp), in place of geo's
// equal blocks of equal clusters: each a cluster of contiguous hosts with its own
// link latency and backbone, each pair joined by the wide-area links its route
// names (shared in both directions, and by every route that names them).
struct RegionTable {
  struct Region {
    int first_host;
    double link_latency, backbone, backbone_latency;  // backbone: HUGE_VAL when none
  };
  struct WideLink {
    double bandwidth, latency;
  };
  std::vector<Region> regions;  // by first host, the first at host 0
  std::vector<WideLink> links;
  std::vector<std::vector<int>> routes;  // [a * regions + b]: the links between regions a and b

  int region_of(int host) const;
  // The bytes it holds.
  double bytes() const;
  const std::vector<int>& route(int a, int b) const {
    return routes[static_cast<std::size_t>(a) * regions.size() + static_cast<std::size_t>(b)];
  }
};

// The platform the estimate assumes: scripts/avbench platform's cluster or cloud, one
// host per peer with a private link to a backbone all links share (its defaults
// here).
struct PlatformModel {
  double link_latency = 50e-6;       // seconds, of one peer's link
  double bandwidth = 125e6;          // bytes/s of one peer's link (the median with bandwidth_sigma)
  double backbone_latency = 500e-6;  // seconds
  double backbone = 2.25e9;          // bytes/s of the backbone
  double host_speed = 1e9;           // flops/s of a host (the median with speed_sigma)
  // Lognormal hosts: host i's speed is host_speed exp(speed_sigma z_i) and its
  // link's bandwidth exp(bandwidth_sigma z'_i) times `bandwidth`, z_i and z'_i
  // Stream(seed, platform).normal(0, i, 0) and (0, i, 1), as avbench platform draws them.
  double speed_sigma = 0.0;
  double bandwidth_sigma = 0.0;
  std::uint64_t seed = 1;
  // Hosts listed one by one (a platform file's, apps/common/platform_file.hpp):
  // host i's speed and link bandwidth, in place of the medians and spreads above;
  // null: none.
  std::shared_ptr<const std::vector<double>> listed_speeds = nullptr, listed_bandwidths = nullptr;
  bool speeds_vary() const { return speed_sigma > 0 || listed_speeds != nullptr; }
  bool bandwidths_vary() const { return bandwidth_sigma > 0 || listed_bandwidths != nullptr; }
  // avbench platform's geo: `regions` clusters like the one above (contiguous blocks of
  // ranks), each pair joined by a wide-area link of its own. 1: a single cluster.
  int regions = 1;
  double wan_latency = 40e-3;    // seconds
  double wan_bandwidth = 1.25e9;  // bytes/s, one link per pair of regions, both directions sharing it

  // A platform file's regions, in place of `regions` equal blocks of the settings
  // above; null: none.
  std::shared_ptr<const RegionTable> listed_regions = nullptr;

  // A message crosses the sender's link, the backbone and the receiver's link; on
  // geo, the estimate assumes every step has a message between regions (peers meet
  // across the rank blocks in every protocol's default layout), which also crosses
  // the other region's backbone and a wide-area link. Of a platform without listed
  // regions (slowest_hosts gives the estimate one).
  double latency() const { return route_latency(0, regions > 1 ? 1 : 0); }
  // The region of host i, of the first n_peers hosts.
  int region_of(int host, std::int64_t n_peers) const;
  // Region r's link latency, backbone bandwidth and backbone latency.
  double link_latency_in(int r) const { return listed_regions ? listed_regions->regions[static_cast<std::size_t>(r)].link_latency : link_latency; }
  double backbone_in(int r) const { return listed_regions ? listed_regions->regions[static_cast<std::size_t>(r)].backbone : backbone; }
  double backbone_latency_in(int r) const {
    return listed_regions ? listed_regions->regions[static_cast<std::size_t>(r)].backbone_latency : backbone_latency;
  }
  // The latency of a message's route from region a to region b.
  double route_latency(int a, int b) const;
  // The wide-area links between regions a != b: f(key, bandwidth, latency) for
  // each, key a number below wide_link_keys() that names the link.
  template <class F>
  void for_each_wide_link(int a, int b, F&& f) const {
    if (listed_regions == nullptr) {
      f(std::int64_t{std::min(a, b)} * regions + std::max(a, b), wan_bandwidth, wan_latency);
      return;
    }
    for (int l : listed_regions->route(a, b)) {
      const RegionTable::WideLink& w = listed_regions->links[static_cast<std::size_t>(l)];
      f(std::int64_t{l}, w.bandwidth, w.latency);
    }
  }
  std::int64_t wide_link_keys() const {
    return listed_regions ? static_cast<std::int64_t>(listed_regions->links.size()) : std::int64_t{regions} * regions;
  }
  // Host i's speed and link bandwidth.
  double speed_of(int host) const;
  double bandwidth_of(int host) const;
};

// The hosts of a platform for n peers, drawn once: what the estimate needs of
// lognormal hosts each round, without a draw per peer and round.
class Hosts {
 public:
  // `speeds`: draw the host speeds too (only a run that charges work needs them).
  // `stopped` is polled every 65,536 hosts (millions of lognormal hosts take
  // seconds): StopRequested (core/error.hpp) once it says so.
  Hosts(const PlatformModel& platform, int n_peers, bool speeds = true, const std::function<bool()>& stopped = {});
  const PlatformModel& platform() const { return platform_; }
  bool uniform_speed() const { return speeds_.empty(); }
  bool uniform_bandwidth() const { return bandwidths_.empty(); }
  double speed(int i) const { return speeds_.empty() ? platform_.host_speed : speeds_[static_cast<std::size_t>(i)]; }
  double bandwidth(int i) const {
    return bandwidths_.empty() ? platform_.bandwidth : bandwidths_[static_cast<std::size_t>(i)];
  }
  // The bytes it holds.
  static double bytes(const PlatformModel& platform, int n_peers, bool speeds = true);

 private:
  PlatformModel platform_;
  std::vector<double> speeds_, bandwidths_;  // empty: every host has the platform's
};

// The slowest host and link of the platform's first n hosts (the estimate's
// bounds); of listed regions, the slowest backbone and wide-area link, the longest
// latencies, as if every region had them.
PlatformModel slowest_hosts(const PlatformModel& platform, int n_peers);

// SMPI's piecewise factors for a message of m bytes (SimGrid's default
// smpi/lat-factor and smpi/bw-factor), and the share of every flow that TCP
// acknowledgements send back over the same links (network/crosstraffic).
struct SmpiFactors {
  double latency, bandwidth;
};
SmpiFactors smpi_factors(double message);
inline constexpr double kAcknowledgements = 1.05;
// SimGrid's TCP window (network/TCP-gamma, bytes): a flow whose route has a
// latency of l seconds (before the factor) goes no faster than gamma / (2 l), which
// binds across a wide-area link (40 ms: 51 MB/s) and nowhere inside a cluster.
inline constexpr double kTcpWindow = 4194304;

// A round's messages, as its protocol sends them (the estimate's bound, before a
// run; the sequential engine follows each message: protocols/link_loads.hpp).
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
  double wan_latency = 0, wan_transfer = 0;  // geo
  double total() const {
    return link_latency + backbone_latency + link_transfer + backbone_transfer + wan_latency + wan_transfer;
  }
};
RoundTime round_time(const MessagePattern& pattern, double bytes, const PlatformModel& link = {});


}  // namespace avb
