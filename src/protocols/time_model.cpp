#include "protocols/time_model.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/rng.hpp"
#include "collectives/doubling_allreduce.hpp"

namespace avb {

namespace {

// SimGrid's default smpi/lat-factor and smpi/bw-factor: (threshold in bytes,
// factors), the factors of the largest threshold <= the message size.
struct Factor {
  double threshold, latency, bandwidth;
};
constexpr std::array<Factor, 9> kFactors{{{65472, 11.6436, 0.940694},
                                          {15424, 3.48845, 0.697866},
                                          {9376, 2.59299, 0.58729},
                                          {5776, 2.18796, 1.08739},
                                          {3484, 1.88101, 0.77493},
                                          {1426, 1.61075, 0.608902},
                                          {732, 1.9503, 0.341987},
                                          {257, 1.95341, 0.338112},
                                          {0, 2.01467, 0.812084}}};

// SMPI picks a message's factors by its payload plus an envelope: a message of
// 248 bytes already takes the factors of 257 and more (docs/performance.md).
constexpr double kEnvelope = 12;

const Factor& factor(double message) {
  for (const Factor& f : kFactors)
    if (message + kEnvelope >= f.threshold) return f;
  return kFactors.back();
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

SmpiFactors smpi_factors(double message) {
  const Factor& f = factor(message);
  return {f.latency, f.bandwidth};
}

int RegionTable::region_of(int host) const {
  const auto after = std::upper_bound(regions.begin(), regions.end(), host,
                                      [](int h, const Region& r) { return h < r.first_host; });
  return static_cast<int>(after - regions.begin()) - 1;
}

double RegionTable::bytes() const {
  double entries = 0;
  for (const std::vector<int>& route : routes) entries += static_cast<double>(route.size());
  return static_cast<double>(regions.size() * sizeof(Region) + links.size() * sizeof(WideLink) +
                             routes.size() * sizeof(std::vector<int>)) +
         entries * sizeof(int);
}

int PlatformModel::region_of(int host, std::int64_t n_peers) const {
  if (listed_regions != nullptr) return listed_regions->region_of(host);
  if (regions <= 1) return 0;
  // avbench platform's blocks: region k holds ranks floor(k N / R) .. floor((k + 1) N / R) - 1
  return static_cast<int>(((static_cast<std::int64_t>(host) + 1) * regions - 1) / n_peers);
}

double PlatformModel::route_latency(int a, int b) const {
  double latency = link_latency_in(a) + backbone_latency_in(a) + link_latency_in(b);
  if (a == b) return latency;
  latency += backbone_latency_in(b);
  for_each_wide_link(a, b, [&](std::int64_t, double, double l) { latency += l; });
  return latency;
}

double PlatformModel::speed_of(int host) const {
  if (listed_speeds != nullptr) return (*listed_speeds)[static_cast<std::size_t>(host)];
  if (speed_sigma <= 0) return host_speed;
  return host_speed * std::exp(speed_sigma * Stream(seed, StreamId::platform).normal(0, static_cast<std::uint64_t>(host), 0));
}

double PlatformModel::bandwidth_of(int host) const {
  if (listed_bandwidths != nullptr) return (*listed_bandwidths)[static_cast<std::size_t>(host)];
  if (bandwidth_sigma <= 0) return bandwidth;
  return bandwidth * std::exp(bandwidth_sigma * Stream(seed, StreamId::platform).normal(0, static_cast<std::uint64_t>(host), 1));
}

Hosts::Hosts(const PlatformModel& platform, int n_peers, bool speeds, const std::function<bool()>& stopped)
    : platform_(platform) {
  const auto n = static_cast<std::size_t>(n_peers);
  if (platform.speeds_vary() && speeds) speeds_.resize(n);
  if (platform.bandwidths_vary()) bandwidths_.resize(n);
  auto poll = [&](std::size_t i) {
    if ((i & 65535) == 0 && stopped && stopped()) throw StopRequested{};
  };
  for (std::size_t i = 0; i < speeds_.size(); ++i) {
    poll(i);
    speeds_[i] = platform.speed_of(static_cast<int>(i));
  }
  for (std::size_t i = 0; i < bandwidths_.size(); ++i) {
    poll(i);
    bandwidths_[i] = platform.bandwidth_of(static_cast<int>(i));
  }
}

double Hosts::bytes(const PlatformModel& platform, int n_peers, bool speeds) {
  return 8.0 * n_peers * ((platform.speeds_vary() && speeds ? 1 : 0) + (platform.bandwidths_vary() ? 1 : 0));
}

PlatformModel slowest_hosts(const PlatformModel& platform, int n_peers) {
  PlatformModel p = platform;
  if (platform.listed_regions != nullptr) {
    const RegionTable& t = *platform.listed_regions;
    p.listed_regions = nullptr;
    p.regions = n_peers > 0 ? t.region_of(n_peers - 1) + 1 : 1;
    p.link_latency = p.backbone_latency = p.wan_latency = 0.0;
    p.backbone = p.wan_bandwidth = HUGE_VAL;
    for (int a = 0; a < p.regions; ++a) {
      const RegionTable::Region& r = t.regions[static_cast<std::size_t>(a)];
      p.link_latency = std::max(p.link_latency, r.link_latency);
      p.backbone = std::min(p.backbone, r.backbone);
      p.backbone_latency = std::max(p.backbone_latency, r.backbone_latency);
      for (int b = a + 1; b < p.regions; ++b) {
        double latency = 0.0;
        platform.for_each_wide_link(a, b, [&](std::int64_t, double bandwidth, double l) {
          p.wan_bandwidth = std::min(p.wan_bandwidth, bandwidth);
          latency += l;
        });
        p.wan_latency = std::max(p.wan_latency, latency);
      }
    }
  }
  if (platform.speeds_vary()) p.host_speed = HUGE_VAL;
  if (platform.bandwidths_vary()) p.bandwidth = HUGE_VAL;
  for (int i = 0; i < n_peers && (platform.speeds_vary() || platform.bandwidths_vary()); ++i) {
    p.host_speed = std::min(p.host_speed, platform.speed_of(i));
    p.bandwidth = std::min(p.bandwidth, platform.bandwidth_of(i));
  }
  return p;
}

void MessagePattern::merge(const MessagePattern& other) {
  steps = std::max(steps, other.steps);
  message = std::max(message, other.message);
  busiest = std::max(busiest, other.busiest);
}

MessagePattern butterfly_pattern(int n, std::size_t dim, const Quantizer* quantizer) {
  if (n < 2) return {};
  // The largest part: its reducer receives it from the n - 1 others, then sends it back.
  const double doubles = std::ceil(static_cast<double>(dim) / n);
  const double part =
      quantizer ? static_cast<double>(quantizer->encoded_bytes(static_cast<std::size_t>(doubles))) : 8.0 * doubles;
  return {2, part, (n - 1) * part};
}

MessagePattern collective_pattern(Collective c, int n, std::size_t dim, const Quantizer* quantizer) {
  if (n < 2) return {};
  if (c == Collective::automatic) c = choose_collective(n, dim);
  const double vector = quantizer ? static_cast<double>(quantizer->encoded_bytes(dim)) : 8.0 * static_cast<double>(dim);
  // The quantized ring sends whole chunks, each with its own header.
  const double chunk =
      quantizer ? static_cast<double>(quantizer->encoded_bytes((dim + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n)))
                : vector / n;
  switch (c) {
    case Collective::butterfly:
      return butterfly_pattern(n, dim, quantizer);
    case Collective::ring:
    case Collective::mpi:  // estimated as the ring, as its bytes are
      return {2 * (n - 1), chunk, chunk};
    case Collective::tree:
      return {2 * ceil_log2(n), vector, vector};
    default: {
      const int p2 = floor_power_of_two(n);
      return {ceil_log2(p2) + (p2 == n ? 0 : 2), vector, vector};
    }
  }
}

namespace {

// Geo: the seconds a step's bytes take on the busiest region backbone and on the
// busiest wide-area link, peers of a step spread evenly over the R regions: a
// backbone carries its region's messages, (2R - 1)/R^2 of the step's bytes (those
// leaving or entering it included), and a wide-area link 2/R^2 of them, and at
// least one whole message.
struct GeoTransfer {
  double backbone, wan;
};
GeoTransfer geo_transfer(const MessagePattern& pattern, double per_step, const PlatformModel& link) {
  const double r = link.regions;
  return {per_step * (2 * r - 1) / (r * r) / link.backbone,
          std::max(pattern.message, 2 * per_step / (r * r)) / link.wan_bandwidth};
}

}  // namespace

RoundTime round_time(const MessagePattern& pattern, double bytes, const PlatformModel& link) {
  if (pattern.steps <= 0) return {};
  const Factor& f = factor(pattern.message);
  const double per_step = bytes / pattern.steps;
  RoundTime r;
  r.link_latency = pattern.steps * f.latency * 2 * link.link_latency;
  r.backbone_latency = pattern.steps * f.latency * link.backbone_latency * (link.regions > 1 ? 2 : 1);
  const double on_link = pattern.busiest / link.bandwidth;
  if (link.regions > 1) r.wan_latency = pattern.steps * f.latency * link.wan_latency;
  const GeoTransfer shared = link.regions > 1 ? geo_transfer(pattern, per_step, link)
                                              : GeoTransfer{per_step / link.backbone, 0.0};
  const double on_backbone = shared.backbone, on_wan = shared.wan;
  // A message held back by its TCP window is charged to the link it crosses.
  const double windowed = pattern.message * 2 * link.latency() / kTcpWindow / kAcknowledgements;
  const double worst = std::max({on_link, on_backbone, on_wan, windowed});
  const double transfer = pattern.steps * kAcknowledgements * worst / f.bandwidth;
  (worst == on_link ? r.link_transfer : worst == on_backbone ? r.backbone_transfer : r.wan_transfer) = transfer;
  return r;
}

}  // namespace avb
