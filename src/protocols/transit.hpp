// A message's time in the sequential engine's event loop (sim/event_queue.hpp),
// message by message as it starts: the latency of its route under SMPI's factor,
// then its bytes at the rate its links give it. A link's bandwidth is split evenly
// among the messages moving on it when this one starts (the backbones and
// wide-area links also carry 5% of each for acknowledgements, as in sim/fluid.hpp),
// and no message goes faster than the TCP window over its route's round trip.
//
// Alone on its links a message takes exactly what the flow-by-flow simulation
// (sim/fluid.hpp) gives it. Shared, the split is fixed at its start: a message
// does not speed up when others end, nor slow down when others start. That keeps
// a message's cost at a few operations (an event loop at a million peers sends
// tens of millions of them); docs/simulation.md says where it departs from SMPI.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocols/time_model.hpp"

namespace avb {

// Messages moving on a host's link out and in.
struct LinkEnds {
  std::int32_t out = 0, in = 0;
};
// Where each peer's LinkEnds live: `first` and every `stride` bytes on (a field
// of an event protocol's per-peer records, which a message's start and arrival
// load anyway: at a million peers that is one cache miss fewer for each), or,
// with no `first`, Transit's own array.
struct LinkEndsPlace {
  LinkEnds* first = nullptr;
  std::size_t stride = 0;
};

class Transit {
 public:
  // hosts: the platform's first n_peers hosts (kept by reference).
  Transit(const Hosts& hosts, int n_peers);

  // Seconds a message of `bytes` from `from` to `to` takes alone on its route.
  double alone(int from, int to, double bytes) const;
  // What alone() gives every empty message, if that is the same for all.
  std::optional<double> empty_seconds() const {
    return empty_ >= 0 ? std::optional<double>(empty_) : std::nullopt;
  }
  // The message starts now: returns its seconds, and counts it on its links
  // until end() is called with the same ends. (Inlined: an event loop calls it
  // for every message, and its call cost as much as its one-region path.)
  [[gnu::always_inline]] double start(int from, int to, double bytes) {
    count(from, to, 1);
    if (one_ && alike_) {
      // seconds()'s value in fewer steps (every message takes this path on a
      // cluster): one link bandwidth for all, so the lesser of the two ends' shares
      // is the bandwidth over the larger of their counts.
      const int sharing = std::max({1, ends(from).out, ends(to).in});
      double rate = hosts_.platform().bandwidth / static_cast<double>(sharing);
      rate = std::min(rate, one_->backbone / (kAcknowledgements * static_cast<double>(std::max(1, backbone_[0]))));
      rate = std::min(rate, one_->window_rate);
      const SmpiFactors f = factors(bytes);
      return f.latency * one_->latency + bytes / (rate * f.bandwidth);
    }
    return seconds(from, to, bytes, true);
  }
  void end(int from, int to) { count(from, to, -1); }
  // Keeps the link ends' counters there from now on; no message may be moving.
  void keep_ends_in(LinkEndsPlace place);

 private:
  // The seconds of a message whose links carry `sharing` messages each at most.
  double seconds(int from, int to, double bytes, bool shared) const;
  // Inline, as every message calls it twice: on a platform of one region it is
  // three additions.
  void count(int from, int to, int by) {
    ends(from).out += by;
    ends(to).in += by;
    if (one_) {
      backbone_[0] += by;
      return;
    }
    count_regions(from, to, by);
  }
  void count_regions(int from, int to, int by);
  // SimGrid's factors of a message size, from a small cache indexed by the
  // size's bits: a run sends a few sizes (an exchange its requests', replies'
  // and refusals', in no order a branch could learn), so each is computed once.
  struct CachedFactors {
    double bytes = -1;  // no message has this size
    SmpiFactors factors{};
  };
  static constexpr int kCacheBits = 4;
  SmpiFactors factors(double bytes) const {
    const std::uint64_t bits = std::bit_cast<std::uint64_t>(bytes) * 0x9E3779B97F4A7C15ull;
    CachedFactors& c = factors_[bits >> (64 - kCacheBits)];
    if (c.bytes != bytes) c = {bytes, smpi_factors(bytes)};
    return c.factors;
  }
  mutable std::array<CachedFactors, std::size_t{1} << kCacheBits> factors_{};
  int& wan(std::int64_t key);

  const Hosts& hosts_;
  const PlatformModel& platform_;
  std::int64_t n_;
  double empty_ = -1;  // an empty message's seconds on a platform of one region (-1: more)
  bool alike_ = false;  // every host's link has the platform's bandwidth
  // A platform of one region: its backbone, route latency and the TCP window's
  // rate over it, which every message shares.
  struct OneRegion {
    double backbone, latency, window_rate;
  };
  std::optional<OneRegion> one_;
  LinkEnds& ends(int peer) const {
    return *reinterpret_cast<LinkEnds*>(reinterpret_cast<std::byte*>(place_.first) +
                                        place_.stride * static_cast<std::size_t>(peer));
  }
  // Messages moving on each host's link out and in (side by side: a message
  // touches one line a peer), each backbone, each wide-area link.
  std::vector<LinkEnds> own_ends_;
  LinkEndsPlace place_;
  std::vector<int> backbone_;
  std::unordered_map<std::int64_t, int> wan_;
};

}  // namespace avb
