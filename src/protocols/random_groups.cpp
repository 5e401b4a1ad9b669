// Protocol "random-groups": each round the participating peers are shuffled (by
// the round's shuffle keys, which every peer computes for every peer) and cut into
// groups of --group-size, leftovers spread round-robin, as in the Moshpit paper's
// baseline. Each group averages with a butterfly all-reduce. For a uniformly random
// split into r groups the expected variance contracts by (r-1)/(N-1) per round,
// whatever the group sizes (docs/protocols.md).
#include "protocols/random_groups.hpp"

#include <algorithm>
#include <vector>

#include "protocols/groups.hpp"

namespace avb {

int random_group_count(int participants, int group_size) { return std::max(1, participants / group_size); }

int random_group_of(int position, int participants, int group_size) {
  const int r = random_group_count(participants, group_size);
  const int full = r * group_size;
  return position < full ? position / group_size : (position - full) % r;
}

namespace {

class RandomGroupsProtocol final : public Protocol {
 public:
  explicit RandomGroupsProtocol(const ProtocolOptions& options)
      : semantics_(*options.on_failure),
        group_size_(options.group_size),
        averager_(*options.on_failure, options.min_group_size) {}

  void step(std::span<double> x, Round& round) override {
    const int me = round.world.rank();
    if (!takes_part(semantics_, round.failures, round.t, me)) return;
    order_ = participants(semantics_, round.failures, round.t);
    shuffle_peers(order_, round.seed, round.t);
    const int participants = static_cast<int>(order_.size());
    int my_group = -1;
    for (int i = 0; i < participants && my_group < 0; ++i)
      if (order_[static_cast<std::size_t>(i)] == me) my_group = random_group_of(i, participants, group_size_);
    // Members in position order: the group's block first, then its leftovers.
    members_.clear();
    for (int i = 0; i < participants; ++i)
      if (random_group_of(i, participants, group_size_) == my_group) members_.push_back(order_[static_cast<std::size_t>(i)]);
    averager_.run(members_, x, round);
  }

 private:
  FailureSemantics semantics_;
  int group_size_;
  GroupAverager averager_;
  std::vector<int> order_, members_;
};

}  // namespace

std::unique_ptr<Protocol> make_random_groups(const ProtocolOptions& options, Comm& /*world*/) {
  return std::make_unique<RandomGroupsProtocol>(options);
}

}  // namespace avb
