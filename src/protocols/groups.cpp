#include "protocols/groups.hpp"

#include <algorithm>

#include "core/rng.hpp"

namespace avb {

std::uint32_t shuffle_key(std::uint64_t seed, int t, int peer) {
  const auto p = static_cast<std::uint64_t>(peer);
  const Stream::Block block = Stream(seed, StreamId::group_shuffle).block(static_cast<std::uint64_t>(t), p / 8, 0);
  const std::uint64_t word = block.w[(p % 8) / 2];
  return static_cast<std::uint32_t>(p % 2 == 0 ? word : word >> 32);
}

void shuffle_peers(std::vector<int>& peers, std::uint64_t seed, int t) {
  // Sort one 64-bit number per peer: (key << 32) | peer orders by key, then by peer.
  // Callers pass peers in ascending order, so a block usually serves eight peers.
  const Stream stream(seed, StreamId::group_shuffle);
  std::vector<std::uint64_t> order(peers.size());
  std::uint64_t cached = ~std::uint64_t{0};
  Stream::Block block{};
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const auto p = static_cast<std::uint64_t>(peers[i]);
    if (p / 8 != cached) {
      cached = p / 8;
      block = stream.block(static_cast<std::uint64_t>(t), cached, 0);
    }
    const std::uint64_t word = block.w[(p % 8) / 2];
    const auto key = static_cast<std::uint32_t>(p % 2 == 0 ? word : word >> 32);
    order[i] = (static_cast<std::uint64_t>(key) << 32) | static_cast<std::uint32_t>(peers[i]);
  }
  std::sort(order.begin(), order.end());
  for (std::size_t i = 0; i < peers.size(); ++i) peers[i] = static_cast<int>(order[i] & 0xffffffffu);
}

bool takes_part(FailureSemantics semantics, const FailureModel& failures, int t, int peer) {
  return semantics != FailureSemantics::survivors || failures.alive(t, peer);
}

std::vector<int> participants(FailureSemantics semantics, const FailureModel& failures, int t) {
  if (semantics == FailureSemantics::survivors) return failures.alive_peers(t);
  std::vector<int> everyone(static_cast<std::size_t>(failures.peers()));
  for (int p = 0; p < failures.peers(); ++p) everyone[static_cast<std::size_t>(p)] = p;
  return everyone;
}

int parts_delivered(std::uint64_t seed, int t, int peer, int n) {
  return static_cast<int>(Stream(seed, StreamId::failure_phase)
                              .below(static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(t),
                                     static_cast<std::uint64_t>(peer), 0));
}

GroupAverager::GroupAverager(const ProtocolOptions& options)
    : semantics_(*options.on_failure),
      min_group_size_(options.min_group_size),
      form_(options.groups),
      allreduce_(options.collective == Collective::automatic ? Collective::butterfly : options.collective),
      quantizer_(options.quantizer) {}

void GroupAverager::run(std::span<const int> members, std::span<double> x, Round& round) {
  const int n = static_cast<int>(members.size());
  if (n < 2 || n < min_group_size_) return;  // a lone peer has nobody to average with
  const bool counts = members.front() == round.world.rank();
  if (counts) round.counters.groups = 1;

  fates_.assign(members.size(), MemberFate{});
  bool any_failed = false;
  for (int i = 0; i < n; ++i) {
    const int peer = members[static_cast<std::size_t>(i)];
    if (round.failures.alive(round.t, peer)) continue;
    any_failed = true;
    fates_[static_cast<std::size_t>(i)] = {true, parts_delivered(round.seed, round.t, peer, n)};
  }
  if (counts && any_failed) round.counters.failed_groups = 1;
  if (any_failed && round.failures.alive(round.t, round.world.rank())) round.counters.waited_on_failure = 1;
  if (any_failed && semantics_ == FailureSemantics::abort) return;  // everyone keeps its values

  Comm group = form_group(round.world, members, form_);
  if (quantizer_.spec().kind != QuantizerKind::none) {
    const ButterflyCoding coding{&quantizer_, round.seed, static_cast<std::uint64_t>(round.t), members};
    butterfly_.average(group, x, any_failed ? std::span<const MemberFate>(fates_) : std::span<const MemberFate>(), coding);
    return;
  }
  if (any_failed) butterfly_.average(group, x, fates_);
  else allreduce_.average(group, x);
}

}  // namespace avb
