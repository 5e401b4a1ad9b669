// The protocols' settings: the ProtocolOptions fields and, in for_each_setting(),
// one declaration per setting (its flag, field, accepted values, help and when a
// run's description records it). The programs' flags, --help, --list-flags, the
// range checks of resolve() and describe() are all derived from that table. A
// protocol's own settings are its struct and table in protocols/<name>_settings.hpp,
// visited from here and read by its catalog row (own_flags), so a setting of one
// protocol is a field and a line there. So is a setting of a family several
// protocols take whole, in the family's header: the quantizer's (codecs/compress.hpp)
// and the waiting policy's (sim/arrivals.hpp). Any other shared setting is a field
// and a line here, whose last argument names the protocols that take it: their
// catalog rows start with its flag (protocols/catalog.cpp, shared_flags).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codecs/compress.hpp"
#include "collectives/group_allreduce.hpp"
#include "core/enum_names.hpp"
#include "core/settings.hpp"
#include "protocols/choco_settings.hpp"
#include "protocols/grid.hpp"
#include "protocols/moshpit_settings.hpp"
#include "protocols/random_groups_settings.hpp"
#include "protocols/swarm_settings.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"
#include "sim/topology.hpp"

namespace avb {

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
  // Each protocol's own settings, declared in its <name>_settings.hpp.
  MoshpitSettings moshpit;
  RandomGroupsSettings random_groups;
  SwarmSettings swarm;
  ChocoSettings choco;
  // moshpit, random-groups: groups with fewer participants do not average.
  int min_group_size = 2;
  // gossip, pushsum, pairwise: the graph (unset: the protocol's default) and its
  // mixing weights; gossip: reweighting under failures.
  std::optional<TopologySpec> topology;
  Weights weights = Weights::uniform;
  AliveWeights alive_weights = AliveWeights::renormalize;
  // swarm, gossip, pairwise, choco, allreduce, random-groups, moshpit: how vectors travel on the wire.
  QuantizerSpec quantizer;
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
// Who takes the shared settings below (core/settings.hpp's Takers).
inline constexpr std::string_view kGroupProtocols[] = {"random-groups", "moshpit"};
inline constexpr std::string_view kCollectiveProtocols[] = {"allreduce", "random-groups", "moshpit"};
inline constexpr std::string_view kGraphProtocols[] = {"gossip", "pushsum", "pairwise", "swarm", "choco"};
inline constexpr std::string_view kWeightedProtocols[] = {"gossip", "choco"};
inline constexpr std::string_view kGossip[] = {"gossip"};

// Every protocol setting, in the order --help lists them (see core/settings.hpp
// for the visitor). `O` is ProtocolOptions or const ProtocolOptions. Which
// protocols take a setting is their catalog rows' business.
template <class O, class Visitor>
void for_each_setting(O& o, Visitor&& v) {
  v.custom("--on-failure", o.on_failure, kOnFailureText, "failure semantics (default: the protocol's own)", true);
  v.integer("--min-group-size", o.min_group_size, IntRange{2, kNoIntLimit},
            "smaller groups do not average, an integer >= 2", true, kGroupProtocols);
  v.word("--collective", o.collective, kCollectiveNames,
         "all-reduce inside groups: auto (allreduce: ring or doubling by cost; group protocols: butterfly), ring "
         "(bandwidth-optimal), doubling (latency-optimal), tree (fewest messages: cheapest to simulate), butterfly, "
         "mpi (the MPI library's MPI_Allreduce; needs --groups comm)",
         true, kCollectiveProtocols);
  v.word("--groups", o.groups, kGroupFormNames,
         "how a round's groups are made: view (rank-translating view of the trial's communicator, free) or comm (an "
         "MPI communicator per group, made in the round)",
         true, kCollectiveProtocols);
  for_each_setting(o.moshpit, v);
  for_each_setting(o.random_groups, v);
  for_each_setting(o.wait, v);
  v.custom("--topology", o.topology, kTopologyText,
           "the graph (default: ring for gossip and choco, one-peer-exp for pushsum, complete for the others)", true,
           kGraphProtocols);
  v.word("--weights", o.weights, kWeightsNames, "mixing weights, uniform (1/(deg+1)) or metropolis", true,
         kWeightedProtocols);
  v.word("--alive-weights", o.alive_weights, kAliveWeightsNames,
         "under failures: renormalize rows over alive neighbours (moves the mean) or metropolis weights of the alive "
         "subgraph (keeps it; needs --weights metropolis)",
         true, kGossip);
  for_each_setting(o.swarm, v);
  for_each_setting(o.choco, v);
  for_each_setting(o.quantizer, v);
}

}  // namespace avb
