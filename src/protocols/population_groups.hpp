// The sequential engine's group averaging (protocols/population.hpp): what
// GroupAverager and ButterflyAllreduce do for one group, done for the group at once
// on the population, with the same sums in the same order, so the values are the
// MPI engines' to the last bit.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "collectives/butterfly_allreduce.hpp"
#include "protocols/groups.hpp"
#include "protocols/population.hpp"

namespace avb {

class PopulationGroups {
 public:
  PopulationGroups(FailureSemantics semantics, int min_group_size, const QuantizerSpec& quantizer = {})
      : semantics_(semantics), min_group_size_(min_group_size), quantizer_(quantizer) {}

  // One group's butterfly all-reduce; `members` in the round's shuffled order (a
  // member's position is the part it reduces). Counts the group, its bytes and its
  // time in `effect`; under a waiting policy cuts its late members first and sets
  // its alive members' round.work.
  void average(std::span<const int> members, Population& x, const PopulationRound& round, RoundEffect& effect);
  // Before a round's groups: they run side by side, each a butterfly's two steps.
  static void begin_round(const PopulationRound& round) {
    if (round.links != nullptr) round.links->phase(2);
  }

 private:
  void average_all(std::span<const int> members, Population& x);
  void average_parts(std::span<const int> members, Population& x, const PopulationRound& round, RoundEffect& effect);
  void average_coded(std::span<const int> members, Population& x, const PopulationRound& round, RoundEffect& effect);
  int note_fates(std::span<const int> members, const Population& x, const PopulationRound& round);
  void reduce_coded(std::span<const int> members, int p, Part part, const ButterflyCoding& coding);
  void charge(std::span<const int> members, const Population& x, const PopulationRound& round);

  FailureSemantics semantics_;
  int min_group_size_;
  Quantizer quantizer_;
  std::vector<std::byte> encoded_;
  std::vector<double> decoded_;
  std::vector<double> sum_, before_;
  std::vector<MemberFate> fates_;
  std::vector<int> contributors_, senders_;
  std::vector<double> parts_;
  LateCut cut_;
};

// Peers ordered by round t's shuffle keys, then by peer (shuffle_peers' order),
// bucket by bucket: `peers` holds each bucket's peers in ascending order, bucket b
// at [starts[b], starts[b + 1]). Reuses its buffers from round to round.
class BucketShuffle {
 public:
  void shuffle(std::span<int> peers, std::span<const int> starts, int n_peers, std::uint64_t seed, int t);

  // The same order in one go, for `participants` (ascending) in dense buckets
  // bucket[p] in [0, buckets) (empty: one bucket): a counting sort by bucket and
  // the leading bits of the key, then an insertion sort that settles the few
  // peers sharing a bin. Fills sorted() and starts().
  void order(std::span<const int> participants, std::span<const std::int64_t> bucket, int buckets, int n_peers,
             std::uint64_t seed, int t);
  std::span<const int> sorted() const { return sorted_; }
  std::span<const int> starts() const { return starts_; }

 private:
  void make_keys(int n_peers, std::uint64_t seed, int t);

  std::vector<std::uint32_t> keys_;
  std::vector<std::uint64_t> order_;
  std::vector<int> sorted_, starts_, counts_, bin_;
};

}  // namespace avb
