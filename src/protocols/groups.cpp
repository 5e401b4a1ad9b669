#include "protocols/groups.hpp"

#include <algorithm>

#include "core/rng.hpp"
#include "sim/compute.hpp"

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

void Round::charge_work(double seconds) {
  if (work_charged) return;
  work_charged = true;
  idle_seconds(seconds);
}

std::span<const int> cut_late(std::span<const int> members, int t, const FailureModel& failures,
                              const Arrivals& arrivals, LateCut& out, std::span<const double> known) {
  out.alive.clear();
  for (int p : members)
    if (failures.alive(t, p)) out.alive.push_back(p);
  const Arrivals::Cut cut = arrivals.cut(t, out.alive, out.late, known);
  out.proceed = cut.proceed;
  out.any_late = cut.late > 0;
  out.kept.clear();
  std::size_t a = 0;
  for (int p : members) {
    const bool up = a < out.alive.size() && out.alive[a] == p;
    if (up && out.late[a++]) continue;
    out.kept.push_back(p);
  }
  return out.kept;
}

double LateCut::work_seconds(int t, int peer, const Arrivals& arrivals) const {
  return any_late ? proceed : arrivals.at(t, peer);
}

GroupAverager::GroupAverager(const ProtocolOptions& options)
    : semantics_(*options.on_failure),
      min_group_size_(options.min_group_size),
      form_(options.groups),
      allreduce_(options.collective == Collective::automatic ? Collective::butterfly : options.collective),
      quantizer_(options.quantizer) {}

void GroupAverager::run(std::span<const int> group, std::span<double> x, Round& round) {
  if (static_cast<int>(group.size()) < std::max(2, min_group_size_)) return;  // nobody to average with
  const int me = round.world.rank();
  const bool counts = group.front() == me;
  if (counts) round.counters.groups = 1;
  std::span<const int> members = group;
  bool any_late = false;
  if (round.arrivals != nullptr) {
    members = cut_late(group, round.t, round.failures, *round.arrivals, cut_);
    any_late = cut_.any_late;
    if (round.failures.alive(round.t, me)) round.charge_work(cut_.work_seconds(round.t, me, *round.arrivals));
  }
  const bool late = std::find(members.begin(), members.end(), me) == members.end();
  const int n = static_cast<int>(members.size());

  fates_.assign(members.size(), MemberFate{});
  bool any_failed = false;
  for (int i = 0; i < n; ++i) {
    const int peer = members[static_cast<std::size_t>(i)];
    if (round.failures.alive(round.t, peer)) continue;
    any_failed = true;
    fates_[static_cast<std::size_t>(i)] = {true, parts_delivered(round.seed, round.t, peer, n)};
  }
  if (counts && any_failed) round.counters.failed_groups = 1;
  if (late) {  // keeps its values, and waits for nobody
    round.counters.late = 1;
    return;
  }
  if (any_failed && round.failures.alive(round.t, me)) round.counters.waited_on_failure = 1;
  // Under abort a failed or late member makes everyone keep its values.
  if ((any_failed || any_late) && semantics_ == FailureSemantics::abort) return;
  if (n < std::max(2, min_group_size_)) return;  // too few on time

  Comm group_comm = form_group(round.world, members, form_);
  if (quantizer_.spec().kind != QuantizerKind::none) {
    const ButterflyCoding coding{&quantizer_, round.seed, static_cast<std::uint64_t>(round.t), members};
    butterfly_.average(group_comm, x, any_failed ? std::span<const MemberFate>(fates_) : std::span<const MemberFate>(),
                       coding);
    return;
  }
  if (any_failed) butterfly_.average(group_comm, x, fates_);
  else allreduce_.average(group_comm, x);
}

}  // namespace avb
