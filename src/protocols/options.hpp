// A protocol's settings: the ProtocolOptions fields and, in for_each_setting(),
// one declaration per setting (its flag, field, accepted values, help and when a
// run's description records it). The programs' flags, --help, --list-flags, the
// range checks of resolve() and describe() are all derived from that table, so
// a new setting is a field and a line here (and the flag in its protocols' rows
// of the catalog, protocols/catalog.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/compress.hpp"
#include "collectives/group_allreduce.hpp"
#include "core/enum_names.hpp"
#include "core/settings.hpp"
#include "protocols/grid.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"
#include "sim/topology.hpp"

namespace avb {

// SwarmSGD's two forms of an interaction between initiator i and partner j.
enum class SwarmMode {
  blocking,      // both take the mean of their pre-local-step models, then re-apply their own progress
  non_blocking,  // i averages with j's last published model; j is not written
};
inline constexpr EnumNames<SwarmMode, 2> kSwarmModeNames{
    "--mode", {{{SwarmMode::blocking, "blocking"}, {SwarmMode::non_blocking, "non-blocking"}}}};
SwarmMode parse_swarm_mode(std::string_view name);  // throws ConfigError (--mode)
std::string_view to_string(SwarmMode mode);

// When a swarm peer initiates interactions in a round of pure averaging (in SGD a
// peer initiates after its local steps instead).
enum class SwarmClock {
  round,    // once per round
  poisson,  // at the ticks of its own rate-1 Poisson clock, a round being one unit of
            // time: every interaction's initiator is then uniform and independent of
            // the others, the model of the analysis (docs/protocols.md, swarm)
};
inline constexpr EnumNames<SwarmClock, 2> kSwarmClockNames{
    "--clock", {{{SwarmClock::round, "round"}, {SwarmClock::poisson, "poisson"}}}};
SwarmClock parse_swarm_clock(std::string_view name);  // throws ConfigError (--clock)
std::string_view to_string(SwarmClock clock);

// How gossip reweights a row when some of its peers are down.
enum class AliveWeights {
  renormalize,  // the row's weights over its alive entries, scaled to sum 1 (the authors'; moves the mean)
  metropolis,   // Metropolis-Hastings weights of the alive subgraph (doubly stochastic; keeps the mean)
};
inline constexpr EnumNames<AliveWeights, 2> kAliveWeightsNames{
    "--alive-weights", {{{AliveWeights::renormalize, "renormalize"}, {AliveWeights::metropolis, "metropolis"}}}};

// Options of every protocol; each reads the fields that concern it.
struct ProtocolOptions {
  std::string name = "allreduce";
  // Unset means the protocol's own default (ProtocolInfo::default_semantics).
  std::optional<FailureSemantics> on_failure;
  // allreduce, moshpit, random-groups: the all-reduce algorithm (auto: see
  // Collective) and how groups are made.
  Collective collective = Collective::automatic;
  GroupForm groups = GroupForm::view;
  // moshpit: grid sides (empty: resolve() sets d = 2, M = ceil(sqrt(N))), where
  // peers sit, and how group keys advance.
  std::vector<int> grid;
  Placement placement = Placement::random;
  KeyUpdate key_update = KeyUpdate::axis;
  // random-groups: target group size (leftovers make some groups one larger).
  int group_size = 32;
  // moshpit, random-groups: groups with fewer participants do not average.
  int min_group_size = 2;
  // gossip, pushsum, pairwise: the graph (unset: the protocol's default) and its
  // mixing weights; gossip: reweighting under failures.
  std::optional<TopologySpec> topology;
  Weights weights = Weights::uniform;
  AliveWeights alive_weights = AliveWeights::renormalize;
  // swarm: who is written in an interaction (docs/protocols.md).
  SwarmMode mode = SwarmMode::blocking;
  SwarmClock clock = SwarmClock::round;
  // swarm, gossip, pairwise, choco, allreduce, random-groups, moshpit: how vectors travel on the wire.
  QuantizerSpec quantizer;
  // choco: the consensus step size gamma in (0, 1].
  double gamma = 1.0;
  // allreduce, random-groups, moshpit: how long a group waits for its members'
  // work (sim/arrivals.hpp); the run builds the round's Arrivals from it.
  WaitSpec wait;
};


// The structured settings' texts. "default" stands for the unset value: the
// protocol's own semantics, graph or grid (resolve() picks it for N).
inline constexpr TextCodec<std::optional<FailureSemantics>> kOnFailureText{
    [] { return "{default," + kFailureSemanticsNames.list(",") + "}"; },
    [](std::string_view text, std::optional<FailureSemantics>& field) {
      field = text == "default" ? std::nullopt : std::optional(kFailureSemanticsNames.parse(text));
    },
    [](const std::optional<FailureSemantics>& field) {
      return field ? std::string(kFailureSemanticsNames.name(*field)) : std::string("default");
    }};
inline constexpr TextCodec<std::vector<int>> kGridText{
    [] { return std::string("AxB[xC...]"); },
    [](std::string_view text, std::vector<int>& field) {
      field = text == "default" ? std::vector<int>{} : parse_grid(text);
    },
    [](const std::vector<int>& field) { return field.empty() ? std::string("default") : grid_to_string(field); }};
inline constexpr TextCodec<std::optional<TopologySpec>> kTopologyText{
    [] {  // --help's form of the list: no spaces, as the other word lists
      std::string words(topology_names());
      std::erase(words, ' ');
      return words;
    },
    [](std::string_view text, std::optional<TopologySpec>& field) {
      field = text == "default" ? std::nullopt : std::optional(parse_topology(text));
    },
    [](const std::optional<TopologySpec>& field) { return field ? to_string(*field) : std::string("default"); }};
// The kind (and bits) only: --lattice-q and --lattice-eps set the lattice's own fields.
inline constexpr TextCodec<QuantizerSpec> kQuantizerText{
    [] { return std::string("{none,fp16,uniform8,stochastic:B,lattice}"); },
    [](std::string_view text, QuantizerSpec& field) {
      const QuantizerSpec parsed = parse_quantizer(text);
      field.kind = parsed.kind;
      field.bits = parsed.bits;
    },
    [](const QuantizerSpec& field) { return to_string(field); }};

// Every protocol setting, in the order --help lists them (see core/settings.hpp
// for the visitor). `O` is ProtocolOptions or const ProtocolOptions. Which
// protocols take a setting is their catalog rows' business.
template <class O, class Visitor>
void for_each_setting(O& o, Visitor&& v) {
  v.custom("--on-failure", o.on_failure, kOnFailureText, "failure semantics (default: the protocol's own)", true);
  v.word("--collective", o.collective, kCollectiveNames,
         "all-reduce inside groups: auto (allreduce: ring or doubling by cost; group protocols: butterfly), ring "
         "(bandwidth-optimal), doubling (latency-optimal), tree (fewest messages: cheapest to simulate), butterfly, "
         "mpi (the MPI library's MPI_Allreduce; needs --groups comm)",
         true);
  v.word("--groups", o.groups, kGroupFormNames,
         "how a round's groups are made: view (rank-translating view of the trial's communicator, free) or comm (an "
         "MPI communicator per group, made in the round)",
         true);
  v.custom("--grid", o.grid, kGridText,
           "virtual grid, sides joined by 'x' such as 32x32 or 8x8x8 (default: MxM, M = ceil(sqrt(N)))", true);
  v.word("--placement", o.placement, kPlacementNames,
         "peers in random distinct cells (random) or row-major by rank (rank)", true);
  v.word("--key-update", o.key_update, kKeyUpdateNames,
         "average along axis (t-1) mod d (axis) or Algorithm 1's chunk-index keys (chunk)", true);
  v.integer("--group-size", o.group_size, IntRange{2, kNoIntLimit}, "peers per group, an integer >= 2", true);
  v.integer("--min-group-size", o.min_group_size, IntRange{2, kNoIntLimit},
            "smaller groups do not average, an integer >= 2", true);
  v.word("--wait", o.wait.policy, kWaitPolicyNames,
         "averaging_bench only: how long a group waits for its members' work (--compute-flops): all, quorum (until "
         "--quorum of them have arrived) or deadline (median + --deadline-k MADs of their recent arrivals, at least "
         "--deadline-floor); late members count as failed for the round (docs/failures.md)",
         true);
  v.real("--quorum", o.wait.quorum, interval(0, 1, true),
         "--wait quorum: the fraction of a group's alive members it waits for, in (0, 1]",
         o.wait.policy == WaitPolicy::quorum);
  v.real("--deadline-k", o.wait.deadline_k, at_least(0),
         "--wait deadline: MADs above the median of recent arrivals, >= 0", o.wait.policy == WaitPolicy::deadline);
  v.real("--deadline-floor", o.wait.deadline_floor, at_least(0, " (seconds)"),
         "--wait deadline: the shortest deadline in seconds, >= 0", o.wait.policy == WaitPolicy::deadline);
  v.custom("--topology", o.topology, kTopologyText,
           "the graph (default: ring for gossip and choco, one-peer-exp for pushsum, complete for the others)", true);
  v.word("--weights", o.weights, kWeightsNames, "mixing weights, uniform (1/(deg+1)) or metropolis", true);
  v.word("--alive-weights", o.alive_weights, kAliveWeightsNames,
         "under failures: renormalize rows over alive neighbours (moves the mean) or metropolis weights of the alive "
         "subgraph (keeps it; needs --weights metropolis)",
         true);
  v.word("--mode", o.mode, kSwarmModeNames,
         "blocking (both peers average, local progress re-applied) or non-blocking (the initiator averages with the "
         "partner's last published model)",
         true);
  v.word("--clock", o.clock, kSwarmClockNames,
         "averaging_bench only: a peer initiates once per round (round) or at the ticks of its own rate-1 Poisson "
         "clock, one round being one unit of time (poisson)",
         true);
  v.real("--gamma", o.gamma, interval(0, 1, true),
         "consensus step size in (0, 1]; 1 with --quantizer none is plain gossip, a compressing quantizer needs a "
         "smaller one",
         true);
  v.custom("--quantizer", o.quantizer, kQuantizerText, "what travels on the wire; stochastic:B has B bits, 1..16",
           true);
  const bool lattice = o.quantizer.kind == QuantizerKind::lattice;
  v.integer("--lattice-q", o.quantizer.lattice_q, IntRange{2, 4294967295LL},
            "--quantizer lattice: q, an integer in [2, 4294967295]", lattice);
  v.real("--lattice-eps", o.quantizer.lattice_eps, above(0), "--quantizer lattice: epsilon, a number > 0", lattice);
}

}  // namespace avb
