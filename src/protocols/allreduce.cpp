// Protocol "allreduce": every alive peer averages with every other, by an
// all-reduce (ring or recursive doubling, by --collective). The paper's
// "All-Reduce with restarts" baseline under `abort` (a round counts only if all N
// peers are alive; the default), or an all-reduce among the survivors under
// `survivors`.
#include "protocols/protocol.hpp"

#include <vector>

#include "protocols/group_allreduce.hpp"

namespace avb {

namespace {

class AllreduceProtocol final : public Protocol {
 public:
  AllreduceProtocol(FailureSemantics semantics, Collective collective)
      : semantics_(semantics), allreduce_(collective) {}

  void step(std::span<double> x, Round& round) override {
    Comm& world = round.world;
    const int n = world.size();
    std::vector<int> alive = round.failures.alive_peers(round.t);
    const bool everyone = static_cast<int>(alive.size()) == n;
    // Only a group of survivors needs the list. Under SMPI every peer's copy would
    // be held through the collective: N^2 memory in the one simulating process.
    if (everyone || semantics_ == FailureSemantics::abort) std::vector<int>().swap(alive);
    // One world-wide group: every alive peer waits out a failure anywhere.
    if (!everyone && round.failures.alive(round.t, world.rank())) round.counters.waited_on_failure = 1;

    if (semantics_ == FailureSemantics::abort) {
      // One world-wide group; any failure restarts it, so nobody's value changes.
      if (world.rank() == 0) {
        round.counters.groups = 1;
        round.counters.failed_groups = everyone ? 0 : 1;
      }
      if (everyone) allreduce_.average(world, x);
      return;
    }

    // survivors: the alive peers form one group and average among themselves.
    if (everyone) {
      if (n < 2) return;  // nobody to average with: not a group
      if (world.rank() == 0) round.counters.groups = 1;
      allreduce_.average(world, x);
      return;
    }
    if (alive.size() < 2) return;  // nobody to average with: not a group
    if (world.rank() == alive.front()) round.counters.groups = 1;
    if (!round.failures.alive(round.t, world.rank())) return;  // a failed peer skips the round
    Comm group = world.subgroup(alive);
    allreduce_.average(group, x);
  }

 private:
  FailureSemantics semantics_;
  GroupAllreduce allreduce_;
};

}  // namespace

std::unique_ptr<Protocol> make_allreduce(const ProtocolOptions& options, Comm& /*world*/) {
  return std::make_unique<AllreduceProtocol>(*options.on_failure, options.collective);
}

}  // namespace avb
