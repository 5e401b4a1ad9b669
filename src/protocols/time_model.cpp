#include "protocols/time_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "protocols/doubling_allreduce.hpp"

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

// Every flow sends 5% of its bytes back, as TCP acknowledgements (SimGrid's
// network/crosstraffic), over the links its data uses.
constexpr double kAcknowledgements = 1.05;

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

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

RoundTime round_time(const MessagePattern& pattern, double bytes, const PlatformModel& link) {
  if (pattern.steps <= 0) return {};
  const Factor& f = factor(pattern.message);
  const double per_step = bytes / pattern.steps;
  RoundTime r;
  r.link_latency = pattern.steps * f.latency * 2 * link.link_latency;
  r.backbone_latency = pattern.steps * f.latency * link.backbone_latency;
  const double on_link = pattern.busiest / link.bandwidth, on_backbone = per_step / link.backbone;
  const double transfer = pattern.steps * kAcknowledgements * std::max(on_link, on_backbone) / f.bandwidth;
  (on_link >= on_backbone ? r.link_transfer : r.backbone_transfer) = transfer;
  return r;
}

double round_seconds(const MessagePattern& pattern, std::uint64_t bytes, const PlatformModel& link) {
  if (pattern.steps <= 0) return 0.0;
  const Factor& f = factor(pattern.message);
  const double per_step = static_cast<double>(bytes) / pattern.steps;
  const double transfer =
      kAcknowledgements * std::max(pattern.busiest / link.bandwidth, per_step / link.backbone) / f.bandwidth;
  return pattern.steps * (f.latency * link.latency() + transfer);
}

}  // namespace avb
