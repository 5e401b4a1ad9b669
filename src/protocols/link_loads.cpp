#include "protocols/link_loads.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "collectives/butterfly_allreduce.hpp"
#include "codecs/compress.hpp"
#include "collectives/doubling_allreduce.hpp"
#include "collectives/ring_allreduce.hpp"
#include "sim/fluid.hpp"

namespace avb {

namespace {

// Wide-area links' loads kept in a table up to this many links (geo: a link for
// each pair of 256 regions), in a map beyond.
constexpr std::int64_t kDenseWideLinks = 65536;
// Phases of at most this many messages are simulated flow by flow.
constexpr std::size_t kFluidMessages = 4096;
// ... and when their transfer takes more than this share of their latency.
constexpr double kFluidShare = 0.01;
// The simulated phases of a round are simulated together, each message released
// when its two peers are done with their earlier ones, up to this many messages
// (repeats counted); a phase beyond it is simulated alone (LinkLoads::fluid_phase).
constexpr std::size_t kRoundMessages = 131072;

}  // namespace

LinkLoads::LinkLoads(const Hosts& hosts, int n_peers, const std::atomic<bool>* stop, FluidMemo* memo)
    : hosts_(hosts),
      platform_(hosts.platform()),
      stop_(stop),
      memo_(memo),
      n_(n_peers),
      regions_(std::max(1, hosts.platform().regions)),
      out_(static_cast<std::size_t>(n_peers), 0.0F),
      in_(static_cast<std::size_t>(n_peers), 0.0F),
      touched_hosts_(static_cast<std::size_t>(n_peers)),
      alike_(hosts.uniform_bandwidth()),
      backbone_(static_cast<std::size_t>(regions_), 0.0) {
  const std::int64_t keys = platform_.wide_link_keys();
  if (regions_ > 1 && keys <= kDenseWideLinks) wan_.assign(static_cast<std::size_t>(keys), 0.0);
}

// Whether a message of `message` bytes can take long enough beside its latency to
// be simulated flow by flow: on the platform's slowest link (the run's estimate
// gives its slowest host's as `bandwidth`), under the smallest latency factor.
bool LinkLoads::may_simulate(const PlatformModel& platform, double message) {
  double slowest = std::min(platform.bandwidth, platform.backbone);
  if (platform.listed_bandwidths)
    for (double b : *platform.listed_bandwidths) slowest = std::min(slowest, b);
  double local = platform.route_latency(0, 0);
  if (platform.listed_regions)
    for (std::size_t r = 0; r < platform.listed_regions->regions.size(); ++r) {
      slowest = std::min(slowest, platform.backbone_in(static_cast<int>(r)));
      local = std::min(local, platform.route_latency(static_cast<int>(r), static_cast<int>(r)));
    }
  const double smallest_factor = std::min(smpi_factors(message).latency, 1.0);
  return kAcknowledgements * message / slowest > kFluidShare * smallest_factor * local;
}

LinkLoads::Simulated LinkLoads::simulated(const PlatformModel& platform, const MessagePattern& pattern, int n_peers,
                                          bool peers_fail) {
  if (pattern.steps <= 0 || pattern.message <= 0 || !may_simulate(platform, pattern.message)) return {};
  // Every peer sends as many messages a step as the busiest one.
  const double at_once = n_peers * std::ceil(pattern.busiest / pattern.message);
  if (at_once > static_cast<double>(kFluidMessages)) return {};  // each phase keeps the bound
  // A round longer than kRoundMessages is a ring's one step repeated 2(N - 1)
  // times (no other pattern has that many steps): that step is simulated alone,
  // once as the peers reach it and once all together (fluid_phase). Where peers
  // fail, the ring of the survivors may be short enough to be simulated whole.
  const double round = at_once * pattern.steps, limit = static_cast<double>(kRoundMessages);
  return {round <= limit ? round : peers_fail ? limit : 2 * at_once, at_once};
}

double LinkLoads::bytes(const PlatformModel& platform, int n_peers, double message) {
  const double regions = std::max(1, platform.regions);
  const double keys = static_cast<double>(platform.wide_link_keys());
  const double pairs = regions > 1 && keys <= kDenseWideLinks ? keys : 0.0;
  // The round's simulation at its largest: each message staged, its flow and the
  // network's state of it; and the flows it comes after, at most those of its two
  // peers' phase before (4 (n - 1) of them; a butterfly of 64 members: 4 x 63, for
  // its 4096 flows). A round of n peers has at most 2 n (n - 1) messages (a ring's).
  const double n = n_peers;
  const double round_messages = std::min(static_cast<double>(kRoundMessages), 2.0 * n * (n - 1.0));
  const double after = std::min(static_cast<double>(kFluidMessages) * 4 * 63, round_messages * 4 * (n - 1.0));
  const double simulated = may_simulate(platform, message) ? round_messages * 512.0 + after * (16 + 4) : 0.0;
  // out and in, the touched hosts (at most every host once), backbones, pairs
  return n * (4.0 + 4.0 + 4.0) + 12.0 * regions + 8.0 * pairs + simulated;
}

int LinkLoads::region(int peer) const { return regions_ == 1 ? 0 : platform_.region_of(peer, n_); }

void LinkLoads::phase(int repeats) {
  close_phase();
  repeats_ = repeats;
}

void LinkLoads::load_host(int peer, double out, double in) {
  const auto i = static_cast<std::size_t>(peer);
  if (out_[i] == 0.0F && in_[i] == 0.0F) touched_hosts_[touched_++] = peer;  // once a phase: at most n
  out_[i] += static_cast<float>(out);
  in_[i] += static_cast<float>(in);
  const float load = std::max(out_[i], in_[i]);
  if (alike_)  // one bandwidth: the busiest host is the most loaded, divided once (close_phase)
    most_loaded_ = std::max(most_loaded_, load);
  else
    busiest_ = std::max(busiest_, static_cast<double>(load) / hosts_.bandwidth(peer));
}

void LinkLoads::load_backbone(int region, double bytes) {
  double& load = backbone_[static_cast<std::size_t>(region)];
  if (load == 0.0) touched_regions_.push_back(region);
  load += bytes;
  busiest_ = std::max(busiest_, load / platform_.backbone_in(region));
}

void LinkLoads::load_wan(int a, int b, double bytes) {
  platform_.for_each_wide_link(a, b, [&](std::int64_t key, double bandwidth, double) {
    double& load = wan_.empty() ? wan_map_[key] : wan_[static_cast<std::size_t>(key)];
    load += bytes;
    busiest_ = std::max(busiest_, load / bandwidth);
  });
  crosses_ = true;
}

void LinkLoads::note_message(double bytes, int a, int b, double pieces) {
  const double latency = platform_.route_latency(a, b);
  message_ = std::max(message_, bytes / pieces);
  latency_ = std::max(latency_, latency);
  windowed_ = std::max(windowed_, bytes / pieces * 2 * latency / kTcpWindow);
}

void LinkLoads::record(int from, int to, double bytes, double pieces) {
  if (too_many_) return;
  if (messages_.size() >= kFluidMessages) {
    too_many_ = true;
    messages_.clear();
    return;
  }
  messages_.push_back({from, to, bytes, pieces});
}

void LinkLoads::send(int from, int to, double bytes, double pieces) {
  if (bytes <= 0 || from == to) return;
  record(from, to, bytes, pieces);
  load_host(from, bytes, 0.0);
  load_host(to, 0.0, bytes);
  const int a = region(from), b = region(to);
  note_message(bytes, a, b, pieces);
  load_backbone(a, bytes);
  if (a == b) return;
  load_backbone(b, bytes);
  load_wan(a, b, bytes);
}

void LinkLoads::butterfly(std::span<const int> members, std::span<const double> parts) {
  const std::size_t m = members.size();
  double total = 0.0;
  for (double part : parts) total += part;
  if (m < 2 || total <= 0) return;
  if (!too_many_ && messages_.size() + m * (m - 1) > kFluidMessages) {
    too_many_ = true;
    messages_.clear();
  }
  if (!too_many_) {
    // Only members with a part receive (a short vector leaves most parts empty).
    receivers_.clear();
    for (std::size_t k = 0; k < m; ++k)
      if (parts[k] > 0) receivers_.push_back(k);
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t k : receivers_)
        if (i != k) messages_.push_back({members[i], members[k], parts[k], 1.0});
  }
  double largest = 0.0;
  for (std::size_t k = 0; k < m; ++k) {
    load_host(members[k], total - parts[k], static_cast<double>(m - 1) * parts[k]);
    largest = std::max(largest, parts[k]);
  }
  if (regions_ == 1) {
    note_message(largest, 0, 0);
    load_backbone(0, static_cast<double>(m - 1) * total);
    return;
  }
  // By region r, with c_r members reducing parts of S_r bytes in all: its backbone
  // carries what its members send one another, (c_r - 1) S_r, what leaves it,
  // c_r (S - S_r), and what enters it, (m - c_r) S_r; the link between regions a
  // and b carries c_a S_b + c_b S_a.
  by_region_.clear();
  for (std::size_t k = 0; k < m; ++k) by_region_.emplace_back(region(members[k]), parts[k]);
  std::sort(by_region_.begin(), by_region_.end());
  std::vector<Share>& shares = shares_;
  shares.clear();
  for (const auto& [r, part] : by_region_) {
    if (shares.empty() || shares.back().region != r) shares.push_back({r, 0.0, 0.0});
    shares.back().members += 1;
    shares.back().bytes += part;
  }
  for (const Share& a : shares)
    for (const Share& b : shares) note_message(largest, a.region, b.region);
  const auto n = static_cast<double>(m);
  for (std::size_t a = 0; a < shares.size(); ++a) {
    const Share& s = shares[a];
    load_backbone(s.region, (s.members - 1) * s.bytes + s.members * (total - s.bytes) + (n - s.members) * s.bytes);
    for (std::size_t b = a + 1; b < shares.size(); ++b)
      load_wan(s.region, shares[b].region, s.members * shares[b].bytes + shares[b].members * s.bytes);
  }
}

void LinkLoads::collective(Collective c, std::span<const int> members, std::size_t dim, const Quantizer* quantizer) {
  const int n = static_cast<int>(members.size());
  if (n < 2) return;
  if (c == Collective::automatic) c = choose_collective(n, dim);
  auto encoded = [&](std::size_t doubles) {
    return quantizer ? static_cast<double>(quantizer->encoded_bytes(doubles)) : 8.0 * static_cast<double>(doubles);
  };
  const double vector = encoded(dim), chunk = encoded((dim + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n));
  auto at = [&](int k) { return members[static_cast<std::size_t>(k)]; };
  switch (c) {
    case Collective::butterfly:
      phase(2);
      parts_.resize(members.size());
      for_each_part_size(dim, n, [&](int k, std::size_t size) { parts_[static_cast<std::size_t>(k)] = encoded(size); });
      butterfly(members, parts_);
      return;
    case Collective::ring:
    case Collective::mpi: {  // charged as the ring, as its bytes are
      // RingAllreduce sends a chunk as segments of at most kDefaultSegment doubles,
      // all in flight at once; the quantized ring sends it whole.
      const std::size_t doubles = (dim + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
      const auto pieces =
          quantizer ? 1.0 : static_cast<double>((doubles + RingAllreduce::kDefaultSegment - 1) / RingAllreduce::kDefaultSegment);
      phase(2 * (n - 1));
      for (int k = 0; k < n; ++k) send(at(k), at((k + 1) % n), chunk, std::max(1.0, pieces));
      return;
    }
    case Collective::tree:  // a binomial reduce, then the broadcast down the same edges
      for (int mask = 1; mask < n; mask <<= 1) {
        phase(2);
        for (int r = mask; r < n; r += 2 * mask) send(at(r), at(r - mask), vector);
      }
      return;
    default: {  // recursive doubling; the ranks beyond a power of two fold in first and out last
      const int p2 = floor_power_of_two(n);
      if (p2 < n) phase(2);
      for (int r = p2; r < n; ++r) send(at(r), at(r - p2), vector);
      for (int mask = 1; mask < p2; mask <<= 1) {
        phase();
        for (int r = 0; r < p2; ++r) send(at(r), at(r ^ mask), vector);
      }
    }
  }
}

void LinkLoads::close_phase() {
  busiest_ = std::max(busiest_, static_cast<double>(most_loaded_) / platform_.bandwidth);
  if (repeats_ > 0 && message_ > 0) {
    const SmpiFactors f = smpi_factors(message_);
    const double latency = f.latency * latency_;
    const double transfer = std::max(kAcknowledgements * busiest_, windowed_) / f.bandwidth;
    // How the links are shared matters only where the bytes take time beside the
    // latency (not for the small messages of a value sweep, which stays fast).
    if (!too_many_ && !messages_.empty() && transfer > kFluidShare * latency) {
      const std::size_t expanded = messages_.size() * static_cast<std::size_t>(repeats_);
      if (pending_.size() + expanded > kRoundMessages) simulate_pending();
      if (expanded <= kRoundMessages) {
        for (int r = 0; r < repeats_; ++r, ++stage_)
          for (const Message& m : messages_) pending_.push_back({m, stage_, before_work_});
      } else {
        fluid_phase();
      }
    } else {
      simulate_pending();
      const double seconds = repeats_ * (latency + transfer);
      every_ += seconds;
      for (auto& entry : ahead_) entry.second += seconds;
    }
  }
  messages_.clear();
  too_many_ = false;
  for (std::size_t k = 0; k < touched_; ++k)
    out_[static_cast<std::size_t>(touched_hosts_[k])] = in_[static_cast<std::size_t>(touched_hosts_[k])] = 0.0F;
  for (int r : touched_regions_) backbone_[static_cast<std::size_t>(r)] = 0.0;
  touched_ = 0;
  most_loaded_ = 0.0F;
  touched_regions_.clear();
  if (crosses_) {
    std::fill(wan_.begin(), wan_.end(), 0.0);
    wan_map_.clear();
  }
  repeats_ = 1;
  before_work_ = false;
  message_ = 0.0;
  latency_ = 0.0;
  crosses_ = false;
  busiest_ = 0.0;
  windowed_ = 0.0;
}

double LinkLoads::clock(int peer) const {
  const auto it = ahead_.find(peer);
  if (it != ahead_.end()) return it->second;
  return (ready_ ? ready_(peer) : 0.0) + every_;
}

void LinkLoads::start_round(Ready ready) {
  close_phase();
  pending_.clear();
  stage_ = 0;
  ready_ = std::move(ready);
  every_ = 0.0;
  ends_by_ = 0.0;
  ahead_.clear();
}

double LinkLoads::finish_round(double alone, std::span<const std::uint8_t> waiting, double timeout) {
  close_phase();
  simulate_pending();
  double last = std::max(alone + every_, ends_by_);
  for (const auto& [peer, at] : ahead_)
    last = std::max(last, at + (!waiting.empty() && waiting[static_cast<std::size_t>(peer)] ? timeout : 0.0));
  start_round(nullptr);
  return last;
}

double LinkLoads::take_seconds() { return finish_round(0.0); }

void LinkLoads::before_work() {
  close_phase();
  before_work_ = true;
}

}  // namespace avb
