// What group protocols (moshpit, random-groups) share: the random order of peers in
// a round, and one group's averaging under a failure semantics.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "collectives/butterfly_allreduce.hpp"
#include "protocols/protocol.hpp"

namespace avb {

// Peer `peer`'s shuffle key in round t: 32 bits of the group_shuffle stream, eight
// peers to one Philox block (counter (t, peer / 8, 0); peer's word is
// w[(peer % 8) / 2], low half for even peers). Sorting peers by (key, peer) gives a
// uniformly random order that every peer can compute for every other peer.
std::uint32_t shuffle_key(std::uint64_t seed, int t, int peer);

// Sorts `peers` (distinct) into round t's random order.
void shuffle_peers(std::vector<int>& peers, std::uint64_t seed, int t);

// Does peer `peer` take part in group formation in round t? Under survivors a
// failed peer skips the round before groups form; under abort and partial it fails
// after its group has formed, so it is a member.
bool takes_part(FailureSemantics semantics, const FailureModel& failures, int t, int peer);
// All peers that take part in round t, ascending.
std::vector<int> participants(FailureSemantics semantics, const FailureModel& failures, int t);

// The part a failed member of an n-member group had delivered when it failed
// (partial semantics): uniform on 0..n-1 from the failure_phase stream, counter
// (t, peer, 0). 0 = failed before sending; n-1 = sent everything, failed while
// reducing. Either way its own part is lost.
int parts_delivered(std::uint64_t seed, int t, int peer, int n);

// A waiting policy's cut of one group (sim/arrivals.hpp): its alive members, which
// of them are late, and the group without its late members (`kept`, in the
// group's order; failed members stay, for the semantics to handle).
struct LateCut {
  std::vector<int> alive, kept;
  std::vector<std::uint8_t> late;  // by alive member
  double proceed = 0.0;
  bool any_late = false;
  // The work an alive member is charged: its own when nobody is late (the
  // group's messages wait for the last), else everyone's until the group goes on.
  double work_seconds(int t, int peer, const Arrivals& arrivals) const;
};
// `known`: every peer's arrival this round when the caller has them (Arrivals::cut).
std::span<const int> cut_late(std::span<const int> members, int t, const FailureModel& failures,
                              const Arrivals& arrivals, LateCut& out, std::span<const double> known = {});

// Runs one group's averaging: `members` are world ranks in the round's shuffled
// order (a member's position is its part in the butterfly), formed by the caller
// from peers that take part. Collective over the members only.
//   survivors: the members (all alive) average;
//   abort:     a group with a failed member keeps every value;
//   partial:   the butterfly runs with each failed member's fate (see butterfly_allreduce.hpp),
//              whatever --collective says: only the butterfly models partial delivery.
// Groups smaller than min_group_size do not run and are not counted. Under a
// waiting policy (round.arrivals) the late members are cut first: they keep their
// values, the rest average as above, and under abort the group gives up. The group is
// made as options.groups says, inside the round; its all-reduce is options.collective
// (auto: the butterfly). Parts travel
// encoded by options.quantizer, through the butterfly (butterfly_allreduce.hpp).
class GroupAverager {
 public:
  explicit GroupAverager(const ProtocolOptions& options);
  void run(std::span<const int> members, std::span<double> x, Round& round);

 private:
  FailureSemantics semantics_;
  int min_group_size_;
  GroupForm form_;
  GroupAllreduce allreduce_;
  Quantizer quantizer_;
  ButterflyAllreduce butterfly_;
  std::vector<MemberFate> fates_;
  LateCut cut_;
};

}  // namespace avb
