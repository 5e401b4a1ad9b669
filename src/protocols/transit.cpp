#include "protocols/transit.hpp"

#include <algorithm>
#include <cmath>

namespace avb {

namespace {
// The share of a shared link's bandwidth each message also takes for the
// acknowledgements of messages the other way (sim/fluid.hpp's 5%).
constexpr double kShared = kAcknowledgements;
}  // namespace

Transit::Transit(const Hosts& hosts, int n_peers)
    : hosts_(hosts),
      platform_(hosts.platform()),
      n_(n_peers),
      own_ends_(static_cast<std::size_t>(n_peers)),
      place_{own_ends_.data(), sizeof(LinkEnds)},
      backbone_(static_cast<std::size_t>(std::max(1, hosts.platform().regions)), 0) {
  if (platform_.listed_regions) backbone_.assign(platform_.listed_regions->regions.size(), 0);
  alike_ = hosts.uniform_bandwidth();
  if (backbone_.size() == 1) {
    const double latency = platform_.route_latency(0, 0);
    one_ = OneRegion{platform_.backbone_in(0), latency, kTcpWindow / (2 * latency)};
    empty_ = seconds(0, 0, 0.0, false);
  }
}

int& Transit::wan(std::int64_t key) { return wan_[key]; }

void Transit::count_regions(int from, int to, int by) {
  const int a = platform_.region_of(from, n_), b = platform_.region_of(to, n_);
  backbone_[static_cast<std::size_t>(a)] += by;
  if (a == b) return;
  backbone_[static_cast<std::size_t>(b)] += by;
  platform_.for_each_wide_link(a, b, [&](std::int64_t key, double, double) { wan(key) += by; });
}

double Transit::seconds(int from, int to, double bytes, bool shared) const {
  auto users = [&](int c) { return shared ? static_cast<double>(std::max(1, c)) : 1.0; };
  double rate = std::min(hosts_.bandwidth(from) / users(ends(from).out),
                         hosts_.bandwidth(to) / users(ends(to).in));
  double latency = 0, window = 0;
  if (one_) {  // one region: its figures kept, the values the lookups below give
    rate = std::min(rate, one_->backbone / (kShared * users(backbone_[0])));
    latency = one_->latency;
    window = one_->window_rate;
  } else {
    const int a = platform_.region_of(from, n_), b = platform_.region_of(to, n_);
    rate = std::min(rate, platform_.backbone_in(a) / (kShared * users(backbone_[static_cast<std::size_t>(a)])));
    if (a != b) {
      rate = std::min(rate, platform_.backbone_in(b) / (kShared * users(backbone_[static_cast<std::size_t>(b)])));
      platform_.for_each_wide_link(a, b, [&](std::int64_t key, double bandwidth, double) {
        const auto it = wan_.find(key);
        rate = std::min(rate, bandwidth / (kShared * users(it == wan_.end() ? 0 : it->second)));
      });
    }
    latency = platform_.route_latency(a, b);
    window = kTcpWindow / (2 * latency);
  }
  rate = std::min(rate, window);
  const SmpiFactors f = factors(bytes);
  return f.latency * latency + bytes / (rate * f.bandwidth);
}

double Transit::alone(int from, int to, double bytes) const {
  if (bytes == 0 && empty_ >= 0) return empty_;  // the settle barrier's tokens, N log N a round
  return seconds(from, to, bytes, false);
}

void Transit::keep_ends_in(LinkEndsPlace place) {
  place_ = place.first != nullptr ? place : LinkEndsPlace{own_ends_.data(), sizeof(LinkEnds)};
}

}  // namespace avb
