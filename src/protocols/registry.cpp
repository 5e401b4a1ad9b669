// The protocol registry: a fixed table, built on each call (no global state that
// SMPI ranks would share).
#include <algorithm>

#include "core/error.hpp"
#include "protocols/allreduce.hpp"
#include "protocols/gossip.hpp"
#include "protocols/moshpit.hpp"
#include "protocols/protocol.hpp"
#include "protocols/random_groups.hpp"
#include "protocols/swarm.hpp"

namespace avb {

std::vector<ProtocolInfo> protocol_catalog() {
  const std::vector<FailureSemantics> all = {FailureSemantics::survivors, FailureSemantics::abort,
                                             FailureSemantics::partial};
  return {
      {"allreduce", "all-reduce over all peers (--collective); All-Reduce with restarts under abort",
       FailureSemantics::abort, {FailureSemantics::abort, FailureSemantics::survivors}},
      {"random-groups", "alive peers shuffled into groups of --group-size each round, butterfly all-reduce",
       FailureSemantics::survivors, all},
      {"moshpit", "Moshpit All-Reduce: groups along a virtual --grid, butterfly all-reduce",
       FailureSemantics::survivors, all},
      {"gossip", "synchronous gossip x <- Wx on a --topology (D-PSGD mixing)", FailureSemantics::survivors,
       {FailureSemantics::survivors}},
      {"pushsum", "push-sum (SGP): (x, w) pushed along a --topology, estimate x/w", FailureSemantics::survivors,
       {FailureSemantics::survivors}},
      {"sgp-paper", "the Moshpit authors' simulated SGP: row-normalised pull average over i +- 2^k",
       FailureSemantics::survivors, {FailureSemantics::survivors}},
      {"pairwise", "randomized pairwise gossip: a random matching on a --topology each round, pairs average",
       FailureSemantics::survivors, {FailureSemantics::survivors}},
      {"swarm", "SwarmSGD: each peer averages with a random --topology neighbour, asynchronously (--mode)",
       FailureSemantics::survivors, {FailureSemantics::survivors}},
  };
}

std::string protocol_names() {
  std::string names;
  for (const auto& info : protocol_catalog()) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

std::vector<std::string_view> protocol_flags(std::string_view name) {
  if (name == "allreduce") return {"--collective"};
  if (name == "random-groups") return {"--group-size", "--min-group-size"};
  if (name == "moshpit") return {"--grid", "--placement", "--key-update", "--min-group-size"};
  // gossip and pairwise send Q(x) under --quantizer (docs/protocols.md). Not
  // pushsum: its shares carry the weight w, which a lossy code would unbalance.
  if (name == "gossip")
    return {"--topology", "--weights", "--alive-weights", "--quantizer", "--lattice-q", "--lattice-eps"};
  if (name == "pairwise") return {"--topology", "--quantizer", "--lattice-q", "--lattice-eps"};
  if (name == "pushsum") return {"--topology"};
  if (name == "swarm") return {"--topology", "--mode", "--clock", "--quantizer", "--lattice-q", "--lattice-eps"};
  return {};
}

namespace {
const ProtocolInfo* find_protocol(const std::vector<ProtocolInfo>& catalog, std::string_view name) {
  for (const auto& info : catalog)
    if (info.name == name) return &info;
  return nullptr;
}
}  // namespace

namespace {
// Groups larger than --min-group-size average; one that cannot be reached by any
// group (larger than --group-size, than every side of the grid, or than N) would
// leave every model as it started, round after round, without a word.
void check_min_group_size(const ProtocolOptions& o, int n_peers) {
  if ((o.name != "moshpit" && o.name != "random-groups") || n_peers < 2) return;
  int largest = n_peers;
  std::string why = "there are " + std::to_string(n_peers) + " peers";
  if (o.name == "random-groups" && o.group_size <= largest) {
    largest = o.group_size;
    why = "--group-size is " + std::to_string(o.group_size);
  }
  if (o.name == "moshpit") {
    const int side = *std::max_element(o.grid.begin(), o.grid.end());  // a group is one line of the grid
    if (side <= largest) {
      largest = side;
      why = "a group is one line of the grid " + grid_to_string(o.grid);
    }
  }
  if (o.min_group_size > largest)
    throw ConfigError("--min-group-size: " + std::to_string(o.min_group_size) + " is larger than any group can be (" +
                      why + "), so no group would ever average; accepted: an integer in [2, " +
                      std::to_string(largest) + "]");
}
}  // namespace

ProtocolOptions resolve(const ProtocolOptions& options, int n_peers) {
  const auto catalog = protocol_catalog();
  const ProtocolInfo* info = find_protocol(catalog, options.name);
  if (info == nullptr)
    throw ConfigError("--protocol: '" + options.name + "' is not one of {" + protocol_names() + "}");
  ProtocolOptions resolved = options;
  if (!resolved.on_failure) resolved.on_failure = info->default_semantics;
  const auto& supported = info->semantics;
  if (std::find(supported.begin(), supported.end(), *resolved.on_failure) == supported.end()) {
    std::string accepted;
    for (auto s : supported) accepted += (accepted.empty() ? "" : ", ") + std::string(to_string(s));
    throw ConfigError("--on-failure: '" + std::string(to_string(*resolved.on_failure)) +
                      "' is not supported by --protocol " + options.name + " (accepted: " + accepted + ")");
  }
  if (resolved.group_size < 2)
    throw ConfigError("--group-size: " + std::to_string(resolved.group_size) + " is not an integer >= 2");
  if (resolved.min_group_size < 2)
    throw ConfigError("--min-group-size: " + std::to_string(resolved.min_group_size) + " is not an integer >= 2");
  if (resolved.name == "moshpit") {
    if (resolved.grid.empty()) resolved.grid = default_grid(n_peers);
    check_grid(resolved.grid, n_peers);
  }
  check_min_group_size(resolved, n_peers);
  validate(resolved.quantizer);
  if (resolved.name == "gossip" || resolved.name == "pushsum" || resolved.name == "pairwise" ||
      resolved.name == "swarm") {
    if (!resolved.topology) {
      TopologySpec spec;
      spec.kind = resolved.name == "gossip"    ? TopologyKind::ring
                  : resolved.name == "pushsum" ? TopologyKind::one_peer_exp
                                               : TopologyKind::complete;
      resolved.topology = spec;
    }
    if (resolved.alive_weights == AliveWeights::metropolis && resolved.weights != Weights::metropolis)
      throw ConfigError("--alive-weights metropolis: needs --weights metropolis (the weights it recomputes for "
                        "the alive subgraph)");
    // Build the graph once here, so that a bad file or an impossible shape is
    // reported before the run starts (with seed 0: whether a graph can be built does
    // not depend on the seed).
    const Topology check(*resolved.topology, n_peers, 0);
    if (resolved.name == "gossip" && n_peers > 0) check.mixing_row(resolved.weights, 1, 0);
  }
  return resolved;
}

std::unique_ptr<Protocol> make_protocol(const ProtocolOptions& options, Comm& world) {
  const ProtocolOptions& resolved = options;  // resolved once per run by the caller
  if (resolved.name == "allreduce") return make_allreduce(*resolved.on_failure, resolved.collective);
  if (resolved.name == "random-groups") return make_random_groups(resolved);
  if (resolved.name == "moshpit") return make_moshpit(resolved, world.size());
  if (resolved.name == "gossip") return make_gossip(resolved, world.size());
  if (resolved.name == "pushsum") return make_pushsum(resolved, world.size());
  if (resolved.name == "sgp-paper") return make_sgp_paper(resolved, world.size());
  if (resolved.name == "pairwise") return make_pairwise(resolved, world.size());
  if (resolved.name == "swarm") return make_swarm(resolved, world);
  throw ConfigError("--protocol: '" + options.name + "' is not one of {" + protocol_names() + "}");
}

std::vector<std::pair<std::string, std::string>> describe(const ProtocolOptions& options) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("protocol", options.name);
  out.emplace_back("on-failure", options.on_failure ? std::string(to_string(*options.on_failure)) : "default");
  if (options.name == "allreduce") out.emplace_back("collective", std::string(to_string(options.collective)));
  if (options.name == "moshpit") {
    out.emplace_back("grid", options.grid.empty() ? "default" : grid_to_string(options.grid));
    out.emplace_back("placement", std::string(to_string(options.placement)));
    out.emplace_back("key-update", std::string(to_string(options.key_update)));
  }
  if (options.name == "random-groups") out.emplace_back("group-size", std::to_string(options.group_size));
  if (options.name == "moshpit" || options.name == "random-groups")
    out.emplace_back("min-group-size", std::to_string(options.min_group_size));
  if (options.name == "gossip" || options.name == "pushsum" || options.name == "pairwise" ||
      options.name == "swarm")
    out.emplace_back("topology", options.topology ? to_string(*options.topology) : "default");
  if (options.name == "swarm") {
    out.emplace_back("mode", std::string(to_string(options.swarm_mode)));
    out.emplace_back("clock", std::string(to_string(options.swarm_clock)));
  }
  if (options.name == "gossip") {
    out.emplace_back("weights", std::string(to_string(options.weights)));
    out.emplace_back("alive-weights", std::string(to_string(options.alive_weights)));
  }
  if (options.name == "swarm" || options.name == "gossip" || options.name == "pairwise")
    for (auto& kv : describe(options.quantizer)) out.push_back(std::move(kv));
  return out;
}

}  // namespace avb
