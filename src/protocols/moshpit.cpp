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

namespace avb {

namespace {

class MoshpitProtocol final : public Protocol {
 public:
  MoshpitProtocol(const ProtocolOptions& options, int n_peers)
      : semantics_(*options.on_failure),
        sides_(options.grid),
        placement_(options.placement),
        key_update_(options.key_update),
        n_(n_peers),
        me_(-1),
        averager_(*options.on_failure, options.min_group_size) {}

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

}  // namespace

std::unique_ptr<Protocol> make_moshpit(const ProtocolOptions& options, Comm& world) {
  return std::make_unique<MoshpitProtocol>(options, world.size());
}

}  // namespace avb
