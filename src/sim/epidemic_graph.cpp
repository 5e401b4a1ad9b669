// The epidemic graph (--topology epidemic:S): each round, each peer's S targets
// drawn from its own keyed stream, and every peer's senders from all the draws.
#include <algorithm>
#include <cstdint>
#include <unordered_set>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sim/topology.hpp"

namespace avb {

std::vector<int> Topology::epidemic_targets(int t, int i) const {
  // S of the N - 1 others, uniformly (Floyd's sampling: S draws, whatever S),
  // draw k of (t, i) from the epidemic stream; the others are numbered 0 .. N - 2,
  // i skipped.
  std::vector<int> targets;
  if (n_ < 2) return targets;
  const Stream stream(seed_, StreamId::epidemic);
  const auto others = static_cast<std::uint64_t>(n_ - 1), s = static_cast<std::uint64_t>(spec_.degree);
  const bool small = s <= 32;  // a scan of the picks is then cheaper than a hash set
  std::unordered_set<std::uint64_t> picked;
  std::vector<std::uint64_t> picks;
  picks.reserve(static_cast<std::size_t>(s));
  for (std::uint64_t j = others - s, k = 0; j < others; ++j, ++k) {
    const std::uint64_t r = stream.bits(static_cast<std::uint64_t>(t), static_cast<std::uint64_t>(i), k) % (j + 1);
    const bool taken = small ? std::find(picks.begin(), picks.end(), r) != picks.end() : picked.count(r) > 0;
    picks.push_back(taken ? j : r);
    if (!small) picked.insert(picks.back());
  }
  targets.reserve(picks.size());
  for (const std::uint64_t v : picks) targets.push_back(static_cast<int>(v) + (static_cast<int>(v) >= i ? 1 : 0));
  std::sort(targets.begin(), targets.end());
  return targets;
}

const std::vector<std::vector<int>>& Topology::epidemic_senders(int t) const {
  if (epidemic_round_ != t) {
    epidemic_in_.assign(static_cast<std::size_t>(n_), {});
    for (int j = 0; j < n_; ++j) {  // ascending j: each list comes out sorted
      if ((j & 4095) == 0) check_stop(stop_);  // N S draws: seconds at millions of peers
      for (int k : epidemic_targets(t, j)) epidemic_in_[static_cast<std::size_t>(k)].push_back(j);
    }
    epidemic_round_ = t;
  }
  return epidemic_in_;
}

}  // namespace avb
