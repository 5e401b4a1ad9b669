// Protocol "allreduce": every alive peer averages with every other, by an
// all-reduce (ring or recursive doubling, by --collective). The paper's
// "All-Reduce with restarts" baseline under `abort` (a round counts only if all N
// peers are alive; the default), or an all-reduce among the survivors under
// `survivors`.
#include "protocols/protocol.hpp"

#include <algorithm>
#include <vector>

#include "collectives/coded_allreduce.hpp"
#include "collectives/group_allreduce.hpp"
#include "protocols/groups.hpp"
#include "protocols/population.hpp"
#include "protocols/time_model.hpp"
#include "protocols/resources.hpp"

namespace avb {

namespace {

class AllreduceProtocol final : public Protocol {
 public:
  AllreduceProtocol(FailureSemantics semantics, Collective collective, GroupForm form, const QuantizerSpec& quantizer)
      : semantics_(semantics), form_(form), allreduce_(collective), coded_(collective), quantizer_(quantizer) {}

  void step(std::span<double> x, Round& round) override {
    if (round.arrivals != nullptr) return step_cut(x, round);
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
      if (everyone) average(world, x, round, {});
      return;
    }

    // survivors: the alive peers form one group and average among themselves.
    if (everyone) {
      if (n < 2) return;  // nobody to average with: not a group
      if (world.rank() == 0) round.counters.groups = 1;
      average(world, x, round, {});
      return;
    }
    if (alive.size() < 2) return;  // nobody to average with: not a group
    if (world.rank() == alive.front()) round.counters.groups = 1;
    if (!round.failures.alive(round.t, world.rank())) return;  // a failed peer skips the round
    Comm group = form_group(world, alive, form_);
    average(group, x, round, alive);
  }

 private:
  // Under a waiting policy (sim/arrivals.hpp): the world-wide group goes on without
  // its late peers, who keep their values; under abort anyone late restarts it.
  void step_cut(std::span<double> x, Round& round) {
    Comm& world = round.world;
    const int n = world.size(), me = world.rank();
    const std::vector<int> alive = round.failures.alive_peers(round.t);
    const std::span<const int> on_time = cut_late(alive, round.t, round.failures, *round.arrivals, cut_);
    const bool up = round.failures.alive(round.t, me);
    if (up) round.charge_work(cut_.work_seconds(round.t, me, *round.arrivals));
    const bool mine = std::binary_search(on_time.begin(), on_time.end(), me);
    if (up && !mine) round.counters.late = 1;
    const bool everyone = static_cast<int>(alive.size()) == n;
    if (!everyone && mine) round.counters.waited_on_failure = 1;
    if (semantics_ == FailureSemantics::abort) {
      if (me == 0) {
        round.counters.groups = 1;
        round.counters.failed_groups = everyone ? 0 : 1;
      }
      if (everyone && !cut_.any_late) average(world, x, round, {});
      return;
    }
    if (on_time.size() < 2) return;  // nobody to average with: not a group
    if (me == on_time.front()) round.counters.groups = 1;
    if (!mine) return;  // failed or late: keeps its values
    if (static_cast<int>(on_time.size()) == n) return average(world, x, round, {});
    Comm group = form_group(world, on_time, form_);
    average(group, x, round, on_time);
  }

  // `peers`: the group's peer id by rank (empty: the world, rank = peer).
  void average(Comm& comm, std::span<double> x, const Round& round, std::span<const int> peers) {
    // Unquantized: the plain all-reduce, as before quantizers (bit-identical traces).
    if (quantizer_.spec().kind == QuantizerKind::none) return allreduce_.average(comm, x);
    coded_.average(comm, x, CodedRun{&quantizer_, round.seed, static_cast<std::uint64_t>(round.t), peers});
  }

  FailureSemantics semantics_;
  GroupForm form_;  // of the survivors' group; everyone averages on the trial's own communicator
  GroupAllreduce allreduce_;
  CodedAllreduce coded_;
  Quantizer quantizer_;
  LateCut cut_;
};


// The sequential form: the mean of the averaging peers, summed in peer order.
class AllreducePopulation final : public SequentialProtocol {
 public:
  AllreducePopulation(FailureSemantics semantics, Collective collective, const QuantizerSpec& quantizer)
      : semantics_(semantics), collective_(collective), quantizer_(quantizer) {}

  RoundEffect step(Population& x, const PopulationRound& round) override {
    members_.clear();
    for (int p = 0; p < x.n; ++p)
      if (round.alive[static_cast<std::size_t>(p)]) members_.push_back(p);
    const bool everyone = static_cast<int>(members_.size()) == x.n;
    bool any_late = false;
    int late = 0;
    if (round.arrivals != nullptr) {  // as AllreduceProtocol::step_cut
      const std::span<const int> on_time = cut_late(members_, round.t, round.failures, *round.arrivals, cut_, round.work);
      if (cut_.any_late)  // everyone works until the group goes on (LateCut::work_seconds)
        for (int p : members_) round.work[static_cast<std::size_t>(p)] = cut_.proceed;
      any_late = cut_.any_late;
      late = static_cast<int>(members_.size() - on_time.size());
      members_.assign(on_time.begin(), on_time.end());
    }

    const int alive = static_cast<int>(members_.size());
    if (!everyone)  // one world-wide group: every alive peer waits out a failure anywhere
      for (int p : members_) round.wait(p);
    RoundEffect effect;
    effect.late = late;
    if (semantics_ == FailureSemantics::abort) {
      effect.groups = 1;
      effect.failed_groups = everyone ? 0 : 1;
      if (!everyone || any_late) return effect;
    } else if (alive < 2) {
      return effect;  // nobody to average with: not a group
    } else {
      effect.groups = 1;
    }
    const auto dim = static_cast<std::size_t>(x.dim);
    if (quantizer_.spec().kind != QuantizerKind::none) return coded_step(x, round, effect);
    mean_.assign(dim, 0.0);
    for (int p : members_)
      for (std::size_t k = 0; k < dim; ++k) mean_[k] += x.peer(p)[k];
    for (double& m : mean_) m /= static_cast<double>(alive);
    for (int p : members_) std::copy(mean_.begin(), mean_.end(), x.peer(p).begin());
    effect.bytes = collective_bytes(collective_, alive, x.model_dim);
    if (round.links != nullptr) round.links->collective(collective_, members_, x.model_dim);
    return effect;
  }

 private:
  // The quantized all-reduce, rank by rank, on the averaging peers' rows.
  RoundEffect coded_step(Population& x, const PopulationRound& round, RoundEffect effect) {
    const auto dim = static_cast<std::size_t>(x.dim);
    rows_.resize(members_.size() * dim);
    for (std::size_t r = 0; r < members_.size(); ++r)
      std::copy(x.peer(members_[r]).begin(), x.peer(members_[r]).end(), rows_.begin() + static_cast<std::ptrdiff_t>(r * dim));
    const CodedRun run{&quantizer_, round.seed, static_cast<std::uint64_t>(round.t), members_};
    effect.bytes = coded_average_rows(rows_, dim, collective_, run);
    for (std::size_t r = 0; r < members_.size(); ++r)
      std::copy(rows_.begin() + static_cast<std::ptrdiff_t>(r * dim),
                rows_.begin() + static_cast<std::ptrdiff_t>((r + 1) * dim), x.peer(members_[r]).begin());
    if (round.links != nullptr) round.links->collective(collective_, members_, dim, &quantizer_);
    return effect;
  }

  FailureSemantics semantics_;
  Collective collective_;
  Quantizer quantizer_;
  std::vector<int> members_;
  std::vector<double> mean_, rows_;
  LateCut cut_;
};

}  // namespace

std::unique_ptr<SequentialProtocol> make_sequential_allreduce(const ProtocolOptions& options, int /*n_peers*/) {
  return std::make_unique<AllreducePopulation>(*options.on_failure, options.collective, options.quantizer);
}

std::unique_ptr<Protocol> make_allreduce(const ProtocolOptions& options, Comm& /*world*/) {
  return std::make_unique<AllreduceProtocol>(*options.on_failure, options.collective, options.groups,
                                             options.quantizer);
}

// All peers in one group; the coded path keeps a copy of the rows it encodes.
ProtocolResources resources_allreduce(const ProtocolOptions& o, const ResourceQuery& q) {
  ProtocolResources r = group_resources(o, q, q.peers);
  r.population_vectors = o.quantizer.kind == QuantizerKind::none ? 0 : 2;
  r.population_bytes = 16;
  return r;
}

extern constinit const ProtocolForms kAllreduceForms{make_allreduce, make_sequential_allreduce, resources_allreduce};

}  // namespace avb
