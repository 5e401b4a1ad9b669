#include "common/protocol_flags.hpp"

#include <algorithm>
#include <utility>

#include "common/flag_values.hpp"
#include "core/error.hpp"
#include "protocols/gossip.hpp"

namespace avb::app {

namespace {

// "gossip, pairwise": the protocols whose catalog row takes `flag`.
std::string protocols_taking(std::string_view flag) {
  std::string out;
  for (const auto& info : avb::protocol_catalog())
    if (avb::takes(info.name, flag)) out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

// Help of a protocol's own flag: what it does, then the protocols that take it.
std::string own(const std::string& flag, const std::string& help) {
  return help + " [--protocol " + protocols_taking(flag) + "]";
}

void add_failure_flags(TypedOptions& add, ProtocolFlags& f) {
  add.group("Failures");
  add.real("--fail-rate", f.fail_rate, "a number in [0, 1]", "probability that a peer fails in a round, in [0, 1]");
  add.word("--failure", f.failure, kFailureKindNames,
           "transient (one round), permanent, churn (peers leave at --fail-rate and new ones take their slots at "
           "--join-rate, loading a live peer's state), or trace (churn on --availability's schedule)");
  add.real("--join-rate", f.join_rate, "a number in [0, 1]",
           "churn: probability in [0, 1] per round that a departed peer's slot is taken by a new peer");
  add.text("--availability", f.availability, "FILE",
           "CSV of when peers are down, one spell a line: peer,down,up in rounds (docs/failures.md); a peer back up "
           "is a new peer loading a live peer's state, as under churn. Implies --failure trace");
  add.real("--stragglers", f.stragglers, "a number in [0, 1]",
           "probability in [0, 1] that a peer straggles: its simulated computation (--compute-flops, --step-flops) "
           "takes --straggler-slowdown times longer; SMPI only");
  add.real("--straggler-slowdown", f.straggler_slowdown, "a number >= 1",
           "how many times slower a straggler computes, >= 1");
  add.real("--straggler-sigma", f.straggler_sigma, "a number in [0, 4]",
           "averaging_bench only: every peer's work of a round (--compute-flops) also takes exp(sigma z) times "
           "longer, z a standard normal drawn anew each round from the seed; 0: none");
  add.real("--detection-timeout", f.detection_timeout, "a number >= 0 (seconds)",
           "seconds before a peer notices that a peer it expected this round is down: simulated under SMPI, and "
           "recorded as the trace's detection_time column on every engine (no real sleep)");
  add.custom("--round-timeout", default_text(f.round_timeout), "FLOAT",
             "seconds a round (an SGD step) may wait for other peers on a real MPI before the run stops with an "
             "error naming the peers waited on, the trace saved as incomplete; 0: no limit. Under SMPI, SimGrid "
             "detects a deadlock itself and this is not used",
             [&f](const std::string& text) {
               f.round_timeout = parse_real("--round-timeout", text, "a number >= 0 (seconds; 0: no limit)");
               if (!(f.round_timeout >= 0.0 && f.round_timeout <= 1e9))
                 throw ConfigError("--round-timeout: '" + text +
                                   "' is not a number in [0, 1e9] (seconds; 0: no limit)");
             });
}

void add_group_flags(TypedOptions& add, ProtocolFlags& f) {
  add.word("--collective", f.collective, kCollectiveNames,
           own("--collective", "all-reduce inside groups: auto (allreduce: ring or doubling by cost; group "
                               "protocols: butterfly), ring (bandwidth-optimal), doubling (latency-optimal), tree "
                               "(fewest messages: cheapest to simulate), butterfly, mpi (the MPI library's "
                               "MPI_Allreduce; needs --groups comm)"));
  add.word("--groups", f.groups, kGroupFormNames,
           own("--groups", "how a round's groups are made: view (rank-translating view of the trial's "
                           "communicator, free) or comm (an MPI communicator per group, made in the round)"));
  add.custom("--grid", "default", "AxB[xC...]",
             own("--grid", "virtual grid, sides joined by 'x' such as 32x32 or 8x8x8 (default: MxM, M = "
                           "ceil(sqrt(N)))"),
             [&f](const std::string& text) { f.grid = text == "default" ? std::vector<int>{} : parse_grid(text); });
  add.word("--placement", f.placement, kPlacementNames,
           own("--placement", "peers in random distinct cells (random) or row-major by rank (rank)"));
  add.word("--key-update", f.key_update, kKeyUpdateNames,
           own("--key-update", "average along axis (t-1) mod d (axis) or Algorithm 1's chunk-index keys (chunk)"));
  add.integer("--group-size", f.group_size, 2, 1 << 30, own("--group-size", "peers per group, an integer >= 2"));
  add.integer("--min-group-size", f.min_group_size, 2, 1 << 30,
              own("--min-group-size", "smaller groups do not average, an integer >= 2"));
  add.word("--wait", f.wait.policy, kWaitPolicyNames,
           own("--wait", "averaging_bench only: how long a group waits for its members' work (--compute-flops): "
                         "all, quorum (until --quorum of them have arrived) or deadline (median + --deadline-k "
                         "MADs of their recent arrivals, at least --deadline-floor); late members count as "
                         "failed for the round (docs/failures.md)"));
  add.real("--quorum", f.wait.quorum, "a number in (0, 1]",
           own("--quorum", "--wait quorum: the fraction of a group's alive members it waits for, in (0, 1]"));
  add.real("--deadline-k", f.wait.deadline_k, "a number >= 0",
           own("--deadline-k", "--wait deadline: MADs above the median of recent arrivals, >= 0"));
  add.real("--deadline-floor", f.wait.deadline_floor, "a number >= 0 (seconds)",
           own("--deadline-floor", "--wait deadline: the shortest deadline in seconds, >= 0"));
}

void add_graph_flags(TypedOptions& add, ProtocolFlags& f) {
  add.custom("--topology", "default", "{ring,torus,hypercube,exp,one-peer-exp,random-regular:K,complete,file:PATH}",
             own("--topology", "the graph (default: ring for gossip and choco, one-peer-exp for pushsum, "
                               "complete for the others)"),
             [&f](const std::string& text) {
               f.topology = text == "default" ? std::nullopt : std::optional<TopologySpec>(parse_topology(text));
             });
  add.word("--weights", f.weights, kWeightsNames,
           own("--weights", "mixing weights, uniform (1/(deg+1)) or metropolis"));
  add.word("--alive-weights", f.alive_weights, kAliveWeightsNames,
           own("--alive-weights", "under failures: renormalize rows over alive neighbours (moves the mean) or "
                                  "metropolis weights of the alive subgraph (keeps it; needs --weights metropolis)"));
  add.word("--mode", f.mode, kSwarmModeNames,
           own("--mode", "blocking (both peers average, local progress re-applied) or non-blocking (the initiator "
                         "averages with the partner's last published model)"));
  add.word("--clock", f.clock, kSwarmClockNames,
           own("--clock", "averaging_bench only: a peer initiates once per round (round) or at the ticks of its own "
                          "rate-1 Poisson clock, one round being one unit of time (poisson)"));
  add.real("--gamma", f.gamma, "a number in (0, 1]",
           own("--gamma", "consensus step size in (0, 1]; 1 with --quantizer none is plain gossip, a compressing "
                          "quantizer needs a smaller one"));
  add.text("--quantizer", f.quantizer, "{none,fp16,uniform8,stochastic:B,lattice}",
           own("--quantizer", "what travels on the wire; stochastic:B has B bits, 1..16"));
  add.integer("--lattice-q", f.lattice_q, 2, 4294967295LL,
              own("--lattice-q", "--quantizer lattice: q, an integer in [2, 4294967295]"));
  add.real("--lattice-eps", f.lattice_eps, "a number > 0",
           own("--lattice-eps", "--quantizer lattice: epsilon, a number > 0"));
}

}  // namespace

void add_protocol_flags(CLI::App& app, ProtocolFlags& f) {
  TypedOptions add(app, f.changed, f.declared);
  add.group("Protocol");
  std::string names = avb::protocol_names();
  names.erase(std::remove(names.begin(), names.end(), ' '), names.end());
  add.text("--protocol", f.protocol, "{" + names + "}", "averaging protocol (docs/protocols.md)");
  add.custom("--on-failure", "default", "{default," + kFailureSemanticsNames.list(",") + "}",
             "failure semantics (default: the protocol's own)", [&f](const std::string& text) {
               f.on_failure = text == "default" ? std::nullopt
                                                : std::optional<FailureSemantics>(parse_failure_semantics(text));
             });
  add_group_flags(add, f);
  add_graph_flags(add, f);
  add_failure_flags(add, f);
}

ProtocolOptions protocol_options(const ProtocolFlags& f) {
  ProtocolOptions o;
  o.name = f.protocol;
  o.on_failure = f.on_failure;
  o.collective = f.collective;
  o.groups = f.groups;
  o.grid = f.grid;
  o.placement = f.placement;
  o.key_update = f.key_update;
  o.group_size = f.group_size;
  o.min_group_size = f.min_group_size;
  o.topology = f.topology;
  o.weights = f.weights;
  o.alive_weights = f.alive_weights;
  o.swarm_mode = f.mode;
  o.swarm_clock = f.clock;
  o.consensus_step = f.gamma;
  o.wait = f.wait;
  o.quantizer = parse_quantizer(f.quantizer, f.lattice_q, f.lattice_eps);
  return o;
}

StragglerSpec straggler_spec(const ProtocolFlags& f) { return {f.stragglers, f.straggler_slowdown, f.straggler_sigma}; }

void set_protocol_options(const ProtocolFlags& f, RunOptions& o) {
  o.protocol = protocol_options(f);
  o.fail_rate = f.fail_rate;
  o.failure = f.failure;
  o.join_rate = f.join_rate;
  if (!f.availability.empty()) {
    if (!f.changed.count("--failure")) o.failure = FailureKind::trace;
    o.availability_path = f.availability;
    o.availability = std::make_shared<const Availability>(Availability::read(f.availability));
  }
  o.stragglers = straggler_spec(f);
  o.detection_timeout = f.detection_timeout;
  o.round_timeout = f.round_timeout;
}

void refuse_foreign_flags(const ProtocolFlags& f, const std::string& protocol) {
  const auto own = protocol_flags(protocol);
  for (const std::string& flag : f.changed) {
    if (protocols_taking(flag).empty() || std::find(own.begin(), own.end(), flag) != own.end()) continue;
    std::string accepted;
    for (auto name : own) accepted += (accepted.empty() ? "" : ", ") + std::string(name);
    throw ConfigError(flag + ": does not apply to --protocol " + protocol + " (its options: " +
                      (accepted.empty() ? "none" : accepted) + ")");
  }
}

}  // namespace avb::app
