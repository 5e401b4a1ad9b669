// The protocol catalog: one row per protocol. Adding a protocol is its source file
// (which defines its forms, k<Name>Forms; the build compiles every file under src/)
// and its row here; a program of its own adds one at run time with register_protocol().
#include <algorithm>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "protocols/protocol.hpp"
#include "protocols/registration.hpp"

// A row names only the fields that differ from ProtocolInfo's defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace avb {

// Defined in each protocol's own file.
extern const ProtocolForms kAllreduceForms, kRandomGroupsForms, kMoshpitForms, kGossipForms, kPushsumForms,
    kSgpPaperForms, kPairwiseForms, kSwarmForms, kChocoForms;

namespace {

using FS = FailureSemantics;

// The flags a settings table declares (a protocol's own settings, its
// <name>_settings.hpp, or a family several protocols share), in its order.
template <class Settings>
std::vector<std::string_view> flags_of() {
  SettingFlagNames names;
  Settings settings;
  for_each_setting(settings, names);
  return names.flags;
}
std::vector<std::string_view> joined(std::vector<std::string_view> a, const std::vector<std::string_view>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The flags of a protocol's own settings, then `after`: a new setting there is
// taken without a word here.
template <class Settings>
std::vector<std::string_view> own_flags(const std::vector<std::string_view>& after) {
  return joined(flags_of<Settings>(), after);
}

// A protocol that sends Q(x) takes the quantizer's flags after its own.
std::vector<std::string_view> with_quantizer(std::vector<std::string_view> own) {
  return joined(std::move(own), flags_of<QuantizerSpec>());
}

// Gradient tracking needs rounds that keep the sum exactly: a lossy code does not.
std::string lossless(const ProtocolOptions& o) {
  return o.quantizer.kind == QuantizerKind::none ? "" : "--quantizer " + to_string(o.quantizer) + " changes the sum";
}

// Gossip's W is doubly stochastic with Metropolis weights, or with uniform ones on
// a graph whose peers all have the same degree (the epidemic graph's in-degrees
// vary, a file's graph may).
std::string gossip_tracking(const ProtocolOptions& o) {
  if (std::string lossy = lossless(o); !lossy.empty()) return lossy;
  const bool irregular = o.topology && (o.topology->kind == TopologyKind::epidemic || o.topology->kind == TopologyKind::file);
  if (o.weights == Weights::uniform && irregular)
    return "--topology " + std::string(o.topology->kind == TopologyKind::epidemic ? "epidemic" : "file") +
           " with uniform weights is not doubly stochastic (the degrees differ; --weights metropolis on an "
           "undirected graph is)";
  return "";
}

// A butterfly part decoded near the receiver's own copy would fail whenever the
// members still disagree by more than the lattice's range, and a butterfly has no
// second message to repair it with (gossip resends the doubles).
constexpr std::string_view kButterflyLattice =
    "a butterfly part has no fallback when a lattice decode fails; docs/protocols.md, \"Quantizers\"";

// The all-reduces take the quantizer's flags but the lattice's own (no lattice).
std::vector<std::string_view> with_quantizer_no_lattice(std::vector<std::string_view> own) {
  SettingFlagNames lattice;
  QuantizerSpec spec;
  for_each_lattice_setting(spec, lattice);
  for (std::string_view flag : flags_of<QuantizerSpec>())
    if (std::find(lattice.flags.begin(), lattice.flags.end(), flag) == lattice.flags.end()) own.push_back(flag);
  return own;
}

// The group protocols wait for their members' work by a policy (sim/arrivals.hpp).
std::vector<std::string_view> with_waiting(std::vector<std::string_view> own) {
  return joined(std::move(own), flags_of<WaitSpec>());
}

// Each row's flags after those of the shared settings that name it among their
// takers (protocols/options.hpp), which a row does not repeat.
std::vector<ProtocolInfo> with_shared_flags(std::vector<ProtocolInfo> rows) {
  const ProtocolOptions defaults;
  for (ProtocolInfo& row : rows) {
    SharedFlagsOf shared{row.name, {}};
    for_each_setting(defaults, shared);
    row.flags = joined(std::move(shared.flags), row.flags);
  }
  return rows;
}

// The built-in rows. The catalog starts as these and grows only by
// register_protocol(), before any run.
const std::vector<ProtocolInfo> kBuiltIn = with_shared_flags({
    {.name = "allreduce",
     .summary = "all-reduce over all peers (--collective); All-Reduce with restarts under abort",
     .default_semantics = FS::abort,
     .semantics = {FS::abort, FS::survivors},
     .flags = with_waiting(with_quantizer_no_lattice({"--model-dim"})),
     .lattice_refusal = "a partial sum has no value near it at the receiver to decode against",
     .tracking_refusal = lossless,
     .forms = kAllreduceForms},
    {.name = "random-groups",
     .summary = "alive peers shuffled into groups of --group-size each round, butterfly all-reduce (--collective)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors, FS::abort, FS::partial},
     .flags = with_waiting(with_quantizer_no_lattice(own_flags<RandomGroupsSettings>({"--model-dim"}))),
     .lattice_refusal = kButterflyLattice,
     .waits_on_failure = [](const ProtocolOptions& o) { return o.on_failure != FS::survivors; },
     .forms = kRandomGroupsForms},
    {.name = "moshpit",
     .summary = "Moshpit All-Reduce: groups along a virtual --grid, butterfly all-reduce (--collective)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors, FS::abort, FS::partial},
     .flags = with_waiting(with_quantizer_no_lattice(own_flags<MoshpitSettings>({"--model-dim"}))),
     .lattice_refusal = kButterflyLattice,
     .waits_on_failure = [](const ProtocolOptions& o) { return o.on_failure != FS::survivors || o.moshpit.key_update != KeyUpdate::chunk; },
     .forms = kMoshpitForms},
    // gossip and pairwise send Q(x) under --quantizer. Not pushsum: its shares
    // carry the weight w, which a lossy code would unbalance.
    {.name = "gossip",
     .summary = "synchronous gossip x <- Wx on a --topology (D-PSGD mixing)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .flags = with_quantizer({"--model-dim"}),
     .default_topology = TopologyKind::exp,
     .tracking_refusal = gossip_tracking,
     .forms = kGossipForms},
    {.name = "pushsum",
     .summary = "push-sum (SGP): (x, w) pushed along a --topology, estimate x/w",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .flags = {"--model-dim"},
     .default_topology = TopologyKind::one_peer_exp,
     .churn = ChurnSupport::no,
     .churn_refusal = "a new peer would need the departed peer's push-sum weight",
     .forms = kPushsumForms},
    {.name = "sgp-paper",
     .summary = "the Moshpit authors' simulated SGP: plain pull mean over their rolled-identity graphs (N >= 3)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .forms = kSgpPaperForms},
    {.name = "pairwise",
     .summary = "randomized pairwise gossip: a random matching on a --topology each round, pairs average",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .flags = with_quantizer({"--model-dim"}),
     .default_topology = TopologyKind::complete,
     .waits_on_failure = [](const ProtocolOptions&) { return false; },
     .forms = kPairwiseForms},
    {.name = "swarm",
     .summary = "SwarmSGD: each peer averages with a random --topology neighbour, asynchronously (--mode)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .flags = with_quantizer(own_flags<SwarmSettings>({"--model-dim"})),
     .default_topology = TopologyKind::complete,
     .churn = ChurnSupport::averaging_only,
     .churn_refusal = "a joiner's state transfer could wait on a peer that waits on it mid-interaction",
     .asynchronous = true,
     .waits_on_failure = [](const ProtocolOptions&) { return false; },
     .forms = kSwarmForms},
    {.name = "choco",
     .summary = "CHOCO-Gossip: gossip steps of size --gamma that send only compressed differences (--quantizer)",
     .default_semantics = FS::survivors,
     .semantics = {FS::survivors},
     .flags = with_quantizer(flags_of<ChocoSettings>()),
     .default_topology = TopologyKind::ring,
     .churn = ChurnSupport::no,
     .churn_refusal = "a new peer has no copies of its neighbours' public vectors, nor they of its",
     .forms = kChocoForms},
});

std::vector<ProtocolInfo>& catalog() {
  static std::vector<ProtocolInfo> rows = kBuiltIn;
  return rows;
}

// The protocol flags the programs declare: those some built-in protocol takes.
// describe() and the programs know no others.
void check_flags(const ProtocolInfo& info) {
  std::set<std::string_view> known;
  for (const ProtocolInfo& row : kBuiltIn) known.insert(row.flags.begin(), row.flags.end());
  for (std::string_view flag : info.flags)
    if (!known.contains(flag))
      throw Error("register_protocol: " + std::string(info.name) + " takes " + std::string(flag) +
                  ", which is not a protocol flag of avbench");
  const bool graph = std::find(info.flags.begin(), info.flags.end(), "--topology") != info.flags.end();
  if (graph != info.default_topology.has_value())
    throw Error("register_protocol: " + std::string(info.name) +
                " must set default_topology exactly when it takes --topology");
}

void check_row(const ProtocolInfo& info) {
  const std::string name(info.name);
  if (name.empty() || info.forms.make == nullptr || info.summary.empty())
    throw Error("register_protocol: a protocol needs a name, a summary and a factory (make)");
  const auto& s = info.semantics;
  if (std::find(s.begin(), s.end(), info.default_semantics) == s.end())
    throw Error("register_protocol: " + name + "'s default_semantics is not among its semantics");
  if (info.churn != ChurnSupport::yes && info.churn_refusal.empty())
    throw Error("register_protocol: " + name + " refuses churn without saying why (churn_refusal)");
  check_flags(info);
}

}  // namespace

const std::vector<ProtocolInfo>& protocol_catalog() { return catalog(); }

void register_protocol(const ProtocolInfo& info) {
  check_row(info);
  for (const ProtocolInfo& row : catalog()) {
    if (row.name != info.name) continue;
    // Under SMPI every simulated rank runs main() in one process and shares the
    // catalog (globals are not privatized), so each registers the same row.
    if (row.forms.make == info.forms.make && row.forms.sequential == info.forms.sequential) return;
    throw Error("register_protocol: a protocol named " + std::string(info.name) + " is already registered");
  }
  catalog().push_back(info);
}

}  // namespace avb
