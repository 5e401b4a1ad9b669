// Protocol "moshpit": Moshpit All-Reduce.
//
// Peers sit in distinct cells of a virtual d-dimensional grid. Each round, peers
// with equal group keys form a group and average with a butterfly all-reduce.
// Every peer computes its group alone, from the grid, the failure model and the
// shuffle keys, which all peers evaluate identically (no matchmaking traffic), and
// then talks to the group through a rank-translating view of the trial's
// communicator (Comm::subgroup): forming a group costs no messages and O(group)
// memory per peer.
//
//   axis:  round t averages along axis (t-1) mod d: the group is the occupied cells
//          of this peer's line. The authors' simulation.
//   chunk: Algorithm 1. The key starts as the cell's coordinates on axes 1..d-1;
//          after a round it becomes (key[1:], c) with c the peer's position in its
//          group's shuffled order, so groupmates part for the next d-1 rounds.
//          Every peer tracks every peer's key (O(N) memory, O(N log N) per round).
//   Placement costs each peer O(N d) time per trial; axis keeps O(d M) memory.
//
// With N = M^d peers and no failures both give the exact average after d rounds.
#include "protocols/protocol.hpp"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "protocols/grid.hpp"
#include "protocols/groups.hpp"
#include "protocols/population_groups.hpp"
#include "protocols/population.hpp"
#include "protocols/resources.hpp"

namespace avb {

namespace {

class MoshpitProtocol final : public Protocol {
 public:
  MoshpitProtocol(const ProtocolOptions& options, int n_peers)
      : semantics_(*options.on_failure),
        sides_(options.moshpit.grid),
        placement_(options.moshpit.placement),
        key_update_(options.moshpit.key_update),
        n_(n_peers),
        me_(-1),
        averager_(options) {}

  void step(std::span<double> x, Round& round) override {
    if (!placed_ || seed_ != round.seed) {
      me_ = round.world.rank();
      place(round.seed);
    }
    members_.clear();
    if (key_update_ == KeyUpdate::axis) line_members(round);
    else chunk_members(round);
    if (takes_part(semantics_, round.failures, round.t, round.world.rank()))
      averager_.run(members_, x, round);
    // A line with a departed occupant waits for its failure to be detected (under
    // survivors the averager never sees the departed peer, so it is checked here).
    if (line_lost_member_ && round.failures.alive(round.t, round.world.rank())) round.counters.waited_on_failure = 1;
  }

 private:
  int d() const { return static_cast<int>(sides_.size()); }

  // Placement depends on the trial's seed only, so it is computed once per trial.
  // Only what this peer needs is kept: the occupants of its d lines (axis) or
  // every peer's key (chunk). Under SMPI all peers share one process, so a table
  // of N entries kept by every peer would cost N^2 (6 GB at 16384 peers); the
  // full placement is a temporary, freed before the next MPI call, and simulated
  // peers run one at a time between MPI calls.
  void place(std::uint64_t seed) {
    seed_ = seed;
    placed_ = true;
    const std::vector<std::int64_t> cell_of = place_peers(seed, sides_, n_, placement_);
    const std::int64_t mine = cell_of[static_cast<std::size_t>(me_)];
    if (key_update_ == KeyUpdate::axis) {
      // line_[a][v]: the occupant of the cell at coordinate v on axis a of this
      // peer's line along a (-1 when empty). One pass over the peers, O(N d).
      line_.assign(static_cast<std::size_t>(d()), {});
      for (int a = 0; a < d(); ++a) line_[static_cast<std::size_t>(a)].assign(static_cast<std::size_t>(sides_[static_cast<std::size_t>(a)]), -1);
      for (int p = 0; p < n_; ++p) {
        const std::int64_t cell = cell_of[static_cast<std::size_t>(p)];
        for (int a = 0; a < d(); ++a) {
          const std::int64_t stride = axis_stride(sides_, a);
          const std::int64_t side = sides_[static_cast<std::size_t>(a)];
          // Same line along a: equal coordinates on every other axis, i.e. equal
          // below the axis (cell mod stride) and above it (cell div stride*side).
          if (cell % stride == mine % stride && cell / (stride * side) == mine / (stride * side))
            line_[static_cast<std::size_t>(a)][static_cast<std::size_t>(cell_coordinate(sides_, cell, a))] = p;
        }
      }
    } else {
      const std::size_t width = static_cast<std::size_t>(std::max(d() - 1, 0));
      keys_.assign(static_cast<std::size_t>(n_) * width, 0);
      for (int p = 0; p < n_; ++p)
        for (int a = 1; a < d(); ++a)
          keys_[static_cast<std::size_t>(p) * width + static_cast<std::size_t>(a - 1)] =
              cell_coordinate(sides_, cell_of[static_cast<std::size_t>(p)], a);
    }
  }

  // axis: the participating occupants of this peer's line along axis (t-1) mod d.
  void line_members(const Round& round) {
    const int axis = (round.t - 1) % d();
    line_lost_member_ = false;
    for (int peer : line_[static_cast<std::size_t>(axis)]) {
      if (peer >= 0 && !round.failures.alive(round.t, peer)) line_lost_member_ = true;
      if (peer >= 0 && takes_part(semantics_, round.failures, round.t, peer)) members_.push_back(peer);
    }
    shuffle_peers(members_, round.seed, round.t);
  }

  // chunk: buckets of equal keys among the participants, each in shuffled order;
  // every participant's key then advances (also when its group does not run).
  void chunk_members(const Round& round) {
    const std::size_t width = static_cast<std::size_t>(std::max(d() - 1, 0));
    order_ = participants(semantics_, round.failures, round.t);
    shuffle_peers(order_, round.seed, round.t);
    // A stable sort by key keeps the shuffled order inside each bucket.
    auto key = [&](int p) { return keys_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(p) * width); };
    std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
      return std::lexicographical_compare(key(a), key(a) + static_cast<std::ptrdiff_t>(width), key(b),
                                          key(b) + static_cast<std::ptrdiff_t>(width));
    });
    const int me = round.world.rank();
    for (std::size_t begin = 0; begin < order_.size();) {
      std::size_t end = begin + 1;
      while (end < order_.size() && std::equal(key(order_[begin]), key(order_[begin]) + static_cast<std::ptrdiff_t>(width),
                                               key(order_[end])))
        ++end;
      if (std::find(order_.begin() + static_cast<std::ptrdiff_t>(begin), order_.begin() + static_cast<std::ptrdiff_t>(end),
                    me) != order_.begin() + static_cast<std::ptrdiff_t>(end))
        members_.assign(order_.begin() + static_cast<std::ptrdiff_t>(begin), order_.begin() + static_cast<std::ptrdiff_t>(end));
      for (std::size_t i = begin; i < end && width > 0; ++i) {
        auto k = key(order_[i]);
        std::rotate(k, k + 1, k + static_cast<std::ptrdiff_t>(width));
        k[static_cast<std::ptrdiff_t>(width) - 1] = static_cast<int>(i - begin);
      }
      begin = end;
    }
  }

  FailureSemantics semantics_;
  std::vector<int> sides_;
  Placement placement_;
  KeyUpdate key_update_;
  int n_;
  int me_;  // this peer's rank in the round's world
  GroupAverager averager_;

  bool placed_ = false;
  std::uint64_t seed_ = 0;
  std::vector<std::vector<int>> line_;  // axis: per axis, the occupants of this peer's line
  std::vector<int> keys_;               // chunk: d-1 coordinates per peer
  std::vector<int> members_, order_;
  bool line_lost_member_ = false;  // axis key update: this round's line has a departed occupant
};


// The sequential form: the whole population's groups each round, from every
// peer's line (axis) or key (chunk), by counting sort.
class MoshpitPopulation final : public SequentialProtocol {
 public:
  MoshpitPopulation(const ProtocolOptions& options, int n_peers)
      : semantics_(*options.on_failure),
        sides_(options.moshpit.grid),
        placement_(options.moshpit.placement),
        key_update_(options.moshpit.key_update),
        n_(n_peers),
        groups_(*options.on_failure, options.min_group_size, options.quantizer) {}

  void begin_trial(const Population& /*x*/, std::uint64_t seed) override {
    const std::vector<std::int64_t> cell_of = place_peers(seed, sides_, n_, placement_);
    const int width = key_update_ == KeyUpdate::axis ? d() : d() - 1;
    bucket_.assign(static_cast<std::size_t>(width) * static_cast<std::size_t>(n_), 0);
    // axis: peer p's line along axis a, numbered densely (the cell without its
    // coordinate on a); chunk: its key, the coordinates on axes 1..d-1.
    for (int a = 0; a < width; ++a)
      for (int p = 0; p < n_; ++p) {
        const std::int64_t cell = cell_of[static_cast<std::size_t>(p)];
        const std::int64_t stride = axis_stride(sides_, a), side = sides_[static_cast<std::size_t>(a)];
        entry(a, p) = key_update_ == KeyUpdate::axis
                          ? static_cast<std::int64_t>(cell / (stride * side) * stride + cell % stride)
                          : cell_coordinate(sides_, cell, a + 1);
      }
  }

  RoundEffect step(Population& x, const PopulationRound& round) override {
    participants_.clear();
    for (int p = 0; p < n_; ++p)
      if (semantics_ != FailureSemantics::survivors || round.alive[static_cast<std::size_t>(p)])
        participants_.push_back(p);
    if (key_update_ == KeyUpdate::axis) wait_on_lost_lines(round);
    const auto [sorted, starts] = groups(round);
    RoundEffect effect;
    PopulationGroups::begin_round(round);
    for (std::size_t b = 0; b + 1 < starts.size(); ++b) {
      round.poll(static_cast<int>(b));
      const std::span<const int> members = sorted.subspan(static_cast<std::size_t>(starts[b]),
                                                          static_cast<std::size_t>(starts[b + 1] - starts[b]));
      groups_.average(members, x, round, effect);
      if (key_update_ == KeyUpdate::chunk && d() > 1) advance_keys(members);
    }
    return effect;
  }

 private:
  int d() const { return static_cast<int>(sides_.size()); }
  std::int64_t& entry(int a, int p) { return bucket_[static_cast<std::size_t>(a) * static_cast<std::size_t>(n_) + static_cast<std::size_t>(p)]; }

  // As MoshpitProtocol::step: the alive occupants of a line (along this round's
  // axis) with a departed occupant wait, whatever the failure semantics.
  void wait_on_lost_lines(const PopulationRound& round) {
    if (round.waiting.empty() || !round.anyone_down()) return;
    const std::size_t axis = static_cast<std::size_t>((round.t - 1) % d());
    const std::span<const std::int64_t> line(bucket_.data() + axis * static_cast<std::size_t>(n_), static_cast<std::size_t>(n_));
    lost_.clear();
    for (int p = 0; p < n_; ++p)
      if (!round.alive[static_cast<std::size_t>(p)]) lost_.push_back(line[static_cast<std::size_t>(p)]);
    std::sort(lost_.begin(), lost_.end());
    for (int p = 0; p < n_; ++p)
      if (std::binary_search(lost_.begin(), lost_.end(), line[static_cast<std::size_t>(p)])) round.wait(p);
  }

  // The round's groups: the participants bucket by bucket, each bucket in the
  // round's shuffled order, and where each bucket starts.
  std::pair<std::span<const int>, std::span<const int>> groups(const PopulationRound& round) {
    if (key_update_ == KeyUpdate::axis) {
      const int axis = (round.t - 1) % d();
      const std::span<const std::int64_t> line(bucket_.data() + static_cast<std::size_t>(axis) * static_cast<std::size_t>(n_),
                                               static_cast<std::size_t>(n_));
      std::int64_t lines = 1;
      for (int a = 0; a < d(); ++a) lines *= a == axis ? 1 : sides_[static_cast<std::size_t>(a)];
      if (lines <= 4 * static_cast<std::int64_t>(n_) + 64) {  // dense line numbers: counting sort
        shuffle_.order(participants_, line, static_cast<int>(lines), n_, round.seed, round.t);
        return {shuffle_.sorted(), shuffle_.starts()};
      }
    }
    sort_by_key(round.t);
    shuffle_.shuffle(sorted_, starts_, n_, round.seed, round.t);
    return {sorted_, starts_};
  }

  // Sparse grids and chunk keys: a comparison sort by (key, peer).
  void sort_by_key(int t) {
    const int width = key_update_ == KeyUpdate::axis ? 1 : d() - 1;
    const int axis = key_update_ == KeyUpdate::axis ? (t - 1) % d() : 0;
    auto key_of = [&](int p, int a) { return entry(axis + a, p); };
    sorted_ = participants_;
    std::stable_sort(sorted_.begin(), sorted_.end(), [&](int l, int r) {
      for (int a = 0; a < width; ++a)
        if (key_of(l, a) != key_of(r, a)) return key_of(l, a) < key_of(r, a);
      return false;
    });
    starts_.assign(1, 0);
    for (std::size_t i = 1; i <= sorted_.size(); ++i) {
      bool same = i < sorted_.size();
      for (int a = 0; a < width && same; ++a) same = key_of(sorted_[i], a) == key_of(sorted_[i - 1], a);
      if (!same) starts_.push_back(static_cast<int>(i));
    }
    if (sorted_.empty()) starts_.assign(1, 0);
  }

  // chunk: key <- (key[1:], position in the group's shuffled order).
  void advance_keys(std::span<const int> members) {
    for (std::size_t pos = 0; pos < members.size(); ++pos) {
      const int p = members[pos];
      for (int a = 0; a + 1 < d() - 1; ++a) entry(a, p) = entry(a + 1, p);
      entry(d() - 2, p) = static_cast<std::int64_t>(pos);
    }
  }

  FailureSemantics semantics_;
  std::vector<int> sides_;
  Placement placement_;
  KeyUpdate key_update_;
  int n_;
  PopulationGroups groups_;
  std::vector<std::int64_t> bucket_;  // [axis or key slot][peer]
  std::vector<std::int64_t> lost_;    // axis: the lines with a departed occupant this round
  std::vector<int> participants_, sorted_, starts_;
  BucketShuffle shuffle_;
};

}  // namespace

// Groups are lines of the grid: at most its longest side.
ProtocolResources resources_moshpit(const ProtocolOptions& o, const ResourceQuery& q) {
  const int side = o.moshpit.grid.empty() ? q.peers : *std::max_element(o.moshpit.grid.begin(), o.moshpit.grid.end());
  ProtocolResources r = group_resources(o, q, side);
  r.population_bytes = 80;  // grid coordinates, keys and counting-sort slots
  return r;
}

extern constinit const ProtocolForms kMoshpitForms = forms_of<MoshpitProtocol, MoshpitPopulation>(resources_moshpit);

}  // namespace avb
