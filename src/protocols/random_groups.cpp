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
#include "protocols/population_groups.hpp"
#include "protocols/population.hpp"
#include "protocols/resources.hpp"

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
        group_size_(options.random_groups.group_size),
        averager_(options) {}

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


// The sequential form: the round's order of all participants, cut as above.
class RandomGroupsPopulation final : public SequentialProtocol {
 public:
  explicit RandomGroupsPopulation(const ProtocolOptions& options)
      : semantics_(*options.on_failure), group_size_(options.random_groups.group_size),
        groups_(*options.on_failure, options.min_group_size, options.quantizer) {}

  RoundEffect step(Population& x, const PopulationRound& round) override {
    order_.clear();
    for (int p = 0; p < x.n; ++p)
      if (semantics_ != FailureSemantics::survivors || round.alive[static_cast<std::size_t>(p)]) order_.push_back(p);
    const int count = static_cast<int>(order_.size());
    shuffle_.order(order_, {}, 1, x.n, round.seed, round.t);
    const std::span<const int> order = shuffle_.sorted();
    // Group g: its block of group_size positions, then its leftovers (positions
    // full + g, full + g + r, ...), in position order.
    const int r = random_group_count(count, group_size_);
    const int full = std::min(count, r * group_size_);
    RoundEffect effect;
    PopulationGroups::begin_round(round);
    for (int g = 0; g < r; ++g) {
      round.poll(g);
      members_.assign(order.begin() + std::min(count, g * group_size_), order.begin() + std::min(full, (g + 1) * group_size_));
      for (int i = full + g; i < count; i += r) members_.push_back(order[static_cast<std::size_t>(i)]);
      groups_.average(members_, x, round, effect);
    }
    return effect;
  }

 private:
  FailureSemantics semantics_;
  int group_size_;
  PopulationGroups groups_;
  BucketShuffle shuffle_;
  std::vector<int> order_, members_;
};

}  // namespace

std::unique_ptr<SequentialProtocol> make_sequential_random_groups(const ProtocolOptions& options, int /*n_peers*/) {
  return std::make_unique<RandomGroupsPopulation>(options);
}

std::unique_ptr<Protocol> make_random_groups(const ProtocolOptions& options, Comm& /*world*/) {
  return std::make_unique<RandomGroupsProtocol>(options);
}

// Groups of --group-size, a leftover making some one larger (at most 2g - 1).
ProtocolResources resources_random_groups(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r = group_resources(o, q, 2 * o.random_groups.group_size - 1);
  r.population_bytes = 48;
  return r;
}

extern constinit const ProtocolForms kRandomGroupsForms{make_random_groups, make_sequential_random_groups, resources_random_groups};

}  // namespace avb
