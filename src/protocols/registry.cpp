// What every protocol shares, driven by its catalog row (protocols/catalog.cpp):
// lookup, option checks and defaults, construction, and the description written
// to headers and traces.
#include <algorithm>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/suggest.hpp"
#include "protocols/gossip.hpp"
#include "protocols/protocol.hpp"

namespace avb {

std::string protocol_names() {
  std::string names;
  for (const auto& info : protocol_catalog()) names += (names.empty() ? "" : ", ") + std::string(info.name);
  return names;
}

bool may_wait_on_failure(const ProtocolOptions& options) {
  const ProtocolInfo& info = protocol_info(options.name);
  if (info.waits_on_failure == nullptr) return true;
  ProtocolOptions with_semantics = options;
  with_semantics.on_failure = options.on_failure.value_or(info.default_semantics);
  return info.waits_on_failure(with_semantics);
}

const ProtocolInfo& protocol_info(std::string_view name) {
  for (const auto& info : protocol_catalog())
    if (info.name == name) return info;
  std::vector<std::string_view> names;
  for (const auto& info : protocol_catalog()) names.emplace_back(info.name);
  throw ConfigError("--protocol: '" + std::string(name) + "' is not one of {" + protocol_names() + "}" +
                    did_you_mean(name, names));
}

ProtocolResources protocol_resources(const ProtocolOptions& options, const ResourceQuery& query) {
  const ProtocolInfo& info = protocol_info(options.name);
  if (info.forms.resources != nullptr) return info.forms.resources(options, query);
  if (options.topology) return graph_resources(options, query, message_bytes(options, static_cast<double>(query.model_dim)));
  return group_resources(options, query, query.peers);
}

std::vector<std::string_view> protocol_flags(std::string_view name) { return protocol_info(name).flags; }

bool takes(std::string_view name, std::string_view flag) {
  const auto& flags = protocol_info(name).flags;
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

void check_failure_support(std::string_view protocol, FailureKind kind, bool training) {
  const ProtocolInfo& info = protocol_info(protocol);
  if (!has_joiners(kind) || info.churn == ChurnSupport::yes) return;
  if (info.churn == ChurnSupport::averaging_only && !training) return;
  throw ConfigError("--failure " + std::string(to_string(kind)) + ": not supported by " + std::string(training ? "sgd_bench " : "") + "--protocol " +
                    std::string(protocol) + " (" + std::string(info.churn_refusal) + ")");
}

namespace {

void check_semantics(const ProtocolInfo& info, FailureSemantics chosen) {
  const auto& supported = info.semantics;
  if (std::find(supported.begin(), supported.end(), chosen) != supported.end()) return;
  std::string accepted;
  for (auto s : supported) accepted += (accepted.empty() ? "" : ", ") + std::string(to_string(s));
  throw ConfigError("--on-failure: '" + std::string(to_string(chosen)) + "' is not supported by --protocol " +
                    std::string(info.name) + " (accepted: " + accepted + ")");
}

// Groups larger than --min-group-size average; one that cannot be reached by any
// group (larger than --group-size, than every side of the grid, or than N) would
// leave every model as it started, round after round, without a word.
void check_min_group_size(const ProtocolOptions& o, int n_peers) {
  if (!takes(o.name, "--min-group-size") || n_peers < 2) return;
  int largest = n_peers;
  std::string why = "there are " + std::to_string(n_peers) + " peers";
  if (takes(o.name, "--group-size") && o.random_groups.group_size <= largest) {
    largest = o.random_groups.group_size;
    why = "--group-size is " + std::to_string(o.random_groups.group_size);
  }
  if (takes(o.name, "--grid")) {
    const int side = *std::max_element(o.moshpit.grid.begin(), o.moshpit.grid.end());  // a group is one line of the grid
    if (side <= largest) {
      largest = side;
      why = "a group is one line of the grid " + grid_to_string(o.moshpit.grid);
    }
  }
  if (o.min_group_size > largest)
    throw ConfigError("--min-group-size: " + std::to_string(o.min_group_size) + " is larger than any group can be (" +
                      why + "), so no group would ever average; accepted: an integer in [2, " +
                      std::to_string(largest) + "]");
}

// Graph protocols: the default graph, and the graph built once here so that a bad
// file or an impossible shape is reported before the run starts (with seed 0:
// whether a graph can be built does not depend on the seed).
void resolve_topology(const ProtocolInfo& info, ProtocolOptions& o, int n_peers) {
  if (!info.default_topology) return;
  if (!o.topology) {
    TopologySpec spec;
    spec.kind = *info.default_topology;
    o.topology = spec;
  }
  if (o.alive_weights == AliveWeights::metropolis && o.weights != Weights::metropolis)
    throw ConfigError("--alive-weights metropolis: needs --weights metropolis (the weights it recomputes for "
                      "the alive subgraph)");
  // Undirected graphs take any weights: a large one (or the complete graph, whose
  // metropolis row alone walks N^2 edges) is not built to check them.
  if (check_large_graph(*o.topology, n_peers) || o.topology->kind == TopologyKind::complete) return;
  const Topology check(*o.topology, n_peers, 0);
  // Uniform rows suit any graph; metropolis refuses a directed one at once.
  if (takes(info.name, "--weights") && n_peers > 0 && o.weights == Weights::metropolis) check.mixing_row(o.weights, 1, 0);
}

// MPI_Allreduce needs a communicator, which only --groups comm gives a group.
void check_groups(const ProtocolOptions& o) {
  if (o.collective == Collective::mpi && o.groups != GroupForm::comm)
    throw ConfigError("--collective mpi: needs --groups comm (MPI_Allreduce runs on a group's own communicator; "
                      "--groups " + std::string(to_string(o.groups)) + " makes none)");
  if (o.quantizer.kind == QuantizerKind::none || !takes(o.name, "--collective")) return;
  // Quantized all-reduces exist for the butterfly (groups) and ring, doubling, tree (allreduce).
  const bool groups = takes(o.name, "--min-group-size");
  const bool coded = groups ? o.collective == Collective::automatic || o.collective == Collective::butterfly
                            : o.collective != Collective::butterfly && o.collective != Collective::mpi;
  if (!coded)
    throw ConfigError("--collective " + std::string(to_string(o.collective)) + ": " + o.name +
                      " has no quantized form of it (--quantizer " + to_string(o.quantizer) + "); accepted: " +
                      (groups ? "auto, butterfly" : "auto, ring, doubling, tree"));
}

// The sequential engine runs every peer in one process: no communicators, and the
// group protocols' sequential forms sum in the butterfly's order.
void check_sequential_groups(const ProtocolOptions& o) {
  if (o.groups == GroupForm::comm)
    throw ConfigError("--groups comm: --engine sequential has no MPI communicators; accepted: view");
  const bool group_protocol = takes(o.name, "--min-group-size");
  if (group_protocol && o.collective != Collective::automatic && o.collective != Collective::butterfly)
    throw ConfigError("--collective " + std::string(to_string(o.collective)) + ": --engine sequential models " +
                      o.name + "'s groups by the butterfly only; accepted: auto, butterfly");
}

}  // namespace

ProtocolOptions resolve(const ProtocolOptions& options, int n_peers) {
  const ProtocolInfo& info = protocol_info(options.name);
  ProtocolOptions resolved = options;
  if (!resolved.on_failure) resolved.on_failure = info.default_semantics;
  check_semantics(info, *resolved.on_failure);
  for_each_setting(resolved, RangeCheck{});
  if (takes(info.name, "--grid")) {
    if (resolved.moshpit.grid.empty()) resolved.moshpit.grid = default_grid(n_peers);
    check_grid(resolved.moshpit.grid, n_peers);
  }
  check_min_group_size(resolved, n_peers);
  if (resolved.name == "sgp-paper") sgp_paper_period(n_peers);  // refuses N < 3 (no graph)
  check_groups(resolved);
  validate(resolved.quantizer);
  if (resolved.quantizer.kind == QuantizerKind::lattice && !info.lattice_refusal.empty())
    throw ConfigError("--quantizer: lattice is not accepted by " + std::string(info.name) + " (" +
                      std::string(info.lattice_refusal) + "); accepted: " + std::string(kReferenceFreeQuantizers));
  resolve_topology(info, resolved, n_peers);
  return resolved;
}

void check_sequential_form(const ProtocolOptions& options) {
  const ProtocolInfo& info = protocol_info(options.name);
  if (info.forms.sequential == nullptr) {
    std::string accepted;
    for (const ProtocolInfo& row : protocol_catalog())
      if (row.forms.sequential != nullptr) accepted += (accepted.empty() ? "" : ", ") + std::string(row.name);
    throw ConfigError("--engine sequential: protocol " + std::string(info.name) +
                      " has no sequential form (it needs a network simulation); accepted protocols: " + accepted);
  }
  check_sequential_groups(options);
}

std::unique_ptr<SequentialProtocol> make_sequential_protocol(const ProtocolOptions& options, int n_peers) {
  check_sequential_form(options);
  return protocol_info(options.name).forms.sequential(options, n_peers);
}

std::unique_ptr<Protocol> make_protocol(const ProtocolOptions& options, Comm& world) {
  return protocol_info(options.name).forms.make(options, world);  // options resolved once per run by the caller
}

namespace {

}  // namespace

std::vector<std::pair<std::string, std::string>> describe(const ProtocolOptions& options) {
  SettingTexts settings;
  for_each_setting(options, settings);
  // In the catalog row's order, after the semantics every protocol has.
  std::vector<std::pair<std::string, std::string>> out{{"protocol", options.name}};
  std::vector<std::string_view> flags{"--on-failure"};
  for (auto flag : protocol_flags(options.name)) flags.push_back(flag);
  for (auto flag : flags)
    for (const auto& kv : settings.out)
      if (kv.first == flag.substr(2)) out.push_back(kv);
  return out;
}

}  // namespace avb
