#include "common/protocol_flags.hpp"

#include <algorithm>
#include <utility>

#include "common/app_support.hpp"
#include "core/error.hpp"
#include "protocols/gossip.hpp"

namespace avb::app {

void add_protocol_flags(CLI::App& app, ProtocolFlags& f) {
  app.add_option("--protocol", f.protocol, "averaging protocol: " + avb::protocol_names())->capture_default_str();
  app.add_option("--fail-rate", f.fail_rate, "probability that a peer fails in a round, in [0, 1]")
      ->capture_default_str();
  app.add_option("--failure", f.failure,
                 "failure kind: transient (one round), permanent, or churn (peers leave at --fail-rate and new "
                 "ones take their slots at --join-rate, loading a live peer's state)")
      ->capture_default_str();
  app.add_option("--join-rate", f.join_rate,
                 "churn: probability in [0, 1] per round that a departed peer's slot is taken by a new peer")
      ->capture_default_str();
  app.add_option("--stragglers", f.stragglers,
                 "probability in [0, 1] that a peer straggles: its simulated computation (--compute-flops, "
                 "--step-flops) takes --straggler-slowdown times longer; SMPI only")
      ->capture_default_str();
  app.add_option("--straggler-slowdown", f.straggler_slowdown, "how many times slower a straggler computes, >= 1")
      ->capture_default_str();
  app.add_option("--detection-timeout", f.detection_timeout,
                 "seconds before a peer notices that a peer it expected this round is down: simulated under "
                 "SMPI, and recorded as the trace's detection_time column on every engine (no real sleep)")
      ->capture_default_str();
  app.add_option("--round-timeout", f.round_timeout,
                 "seconds a round (an SGD step) may wait for other peers on a real MPI before the run stops with "
                 "an error naming the peers waited on, the trace saved as incomplete; 0: no limit. Under SMPI, "
                 "SimGrid detects a deadlock itself and this is not used")
      ->capture_default_str();
  app.add_option("--on-failure", f.on_failure,
                 "failure semantics: survivors, abort, partial (default: the protocol's own)")
      ->capture_default_str();
  app.add_option("--collective", f.collective,
                 "all-reduce inside groups: auto, ring (bandwidth-optimal), doubling (latency-optimal), "
                 "tree (fewest messages: cheapest to simulate)")
      ->capture_default_str();
  app.add_option("--grid", f.grid,
                 "moshpit: virtual grid, sides joined by 'x' such as 32x32 or 8x8x8 (default: MxM, M = "
                 "ceil(sqrt(N)))")
      ->capture_default_str();
  app.add_option("--placement", f.placement,
                 "moshpit: peers in random distinct cells (random) or row-major by rank (rank)")
      ->capture_default_str();
  app.add_option("--key-update", f.key_update,
                 "moshpit: average along axis (t-1) mod d (axis) or Algorithm 1's chunk-index keys (chunk)")
      ->capture_default_str();
  app.add_option("--group-size", f.group_size, "random-groups: peers per group, an integer >= 2")
      ->capture_default_str();
  app.add_option("--min-group-size", f.min_group_size,
                 "moshpit, random-groups: smaller groups do not average, an integer >= 2")
      ->capture_default_str();
  app.add_option("--topology", f.topology,
                 "gossip, pushsum, pairwise, swarm, choco: ring, torus, hypercube, exp, one-peer-exp, random-regular:K, complete or "
                 "file:PATH (default: ring for gossip and choco, one-peer-exp for pushsum, complete for pairwise and swarm)")
      ->capture_default_str();
  app.add_option("--weights", f.weights, "gossip, choco: mixing weights, uniform (1/(deg+1)) or metropolis")
      ->capture_default_str();
  app.add_option("--alive-weights", f.alive_weights,
                 "gossip under failures: renormalize rows over alive neighbours (moves the mean) or metropolis "
                 "weights of the alive subgraph (keeps it; needs --weights metropolis)")
      ->capture_default_str();
  app.add_option("--mode", f.mode,
                 "swarm: blocking (both peers average, local progress re-applied) or non-blocking (the initiator "
                 "averages with the partner's last published model)")
      ->capture_default_str();
  app.add_option("--clock", f.clock,
                 "swarm in averaging_bench: a peer initiates once per round (round) or at the ticks of its own "
                 "rate-1 Poisson clock, one round being one unit of time (poisson)")
      ->capture_default_str();
  app.add_option("--gamma", f.gamma,
                 "choco: consensus step size in (0, 1]; 1 with --quantizer none is plain gossip, a compressing "
                 "quantizer needs a smaller one")
      ->capture_default_str();
  app.add_option("--quantizer", f.quantizer,
                 "swarm, gossip, pairwise, choco: what travels on the wire: none, fp16, uniform8, stochastic:B (B bits, "
                 "1..16) or lattice")
      ->capture_default_str();
  app.add_option("--lattice-q", f.lattice_q, "--quantizer lattice: q, an integer in [2, 4294967295]")
      ->capture_default_str();
  app.add_option("--lattice-eps", f.lattice_eps, "--quantizer lattice: epsilon, a number > 0")
      ->capture_default_str();
}

ProtocolOptions protocol_options(const ProtocolFlags& f) {
  ProtocolOptions o;
  o.name = f.protocol;
  if (f.on_failure != "default") o.on_failure = parse_failure_semantics(f.on_failure);
  o.collective = parse_collective(f.collective);
  if (f.grid != "default") o.grid = parse_grid(f.grid);
  o.placement = parse_placement(f.placement);
  o.key_update = parse_key_update(f.key_update);
  o.group_size = static_cast<int>(parse_integer("--group-size", f.group_size, 2, 1 << 30));
  o.min_group_size = static_cast<int>(parse_integer("--min-group-size", f.min_group_size, 2, 1 << 30));
  if (f.topology != "default") o.topology = parse_topology(f.topology);
  o.weights = parse_weights(f.weights);
  o.alive_weights = parse_alive_weights(f.alive_weights);
  o.swarm_mode = parse_swarm_mode(f.mode);
  o.swarm_clock = parse_swarm_clock(f.clock);
  o.consensus_step = parse_real("--gamma", f.gamma, "a number in (0, 1]");
  o.quantizer = parse_quantizer(f.quantizer,
                                parse_integer("--lattice-q", f.lattice_q, 2, 4294967295LL),
                                parse_real("--lattice-eps", f.lattice_eps, "a number > 0"));
  return o;
}

double fail_rate(const ProtocolFlags& f) { return parse_real("--fail-rate", f.fail_rate, "a number in [0, 1]"); }

FailureKind failure_kind(const ProtocolFlags& f) { return parse_failure_kind(f.failure); }

double join_rate(const ProtocolFlags& f) { return parse_real("--join-rate", f.join_rate, "a number in [0, 1]"); }

double detection_timeout(const ProtocolFlags& f) {
  return parse_real("--detection-timeout", f.detection_timeout, "a number >= 0 (seconds)");
}

double round_timeout(const ProtocolFlags& f) {
  const double seconds = parse_real("--round-timeout", f.round_timeout, "a number >= 0 (seconds; 0: no limit)");
  if (!(seconds >= 0.0 && seconds <= 1e9))
    throw ConfigError("--round-timeout: '" + f.round_timeout + "' is not a number in [0, 1e9] (seconds; 0: no limit)");
  return seconds;
}

StragglerSpec straggler_spec(const ProtocolFlags& f) {
  return {parse_real("--stragglers", f.stragglers, "a number in [0, 1]"),
          parse_real("--straggler-slowdown", f.straggler_slowdown, "a number >= 1")};
}

void refuse_foreign_flags(const ProtocolFlags& f, const std::string& protocol) {
  const ProtocolFlags defaults;
  const std::pair<const char*, bool> changed[] = {
      {"--collective", f.collective != defaults.collective},
      {"--grid", f.grid != defaults.grid},
      {"--placement", f.placement != defaults.placement},
      {"--key-update", f.key_update != defaults.key_update},
      {"--group-size", f.group_size != defaults.group_size},
      {"--min-group-size", f.min_group_size != defaults.min_group_size},
      {"--topology", f.topology != defaults.topology},
      {"--weights", f.weights != defaults.weights},
      {"--alive-weights", f.alive_weights != defaults.alive_weights},
      {"--mode", f.mode != defaults.mode},
      {"--clock", f.clock != defaults.clock},
      {"--gamma", f.gamma != defaults.gamma},
      {"--quantizer", f.quantizer != defaults.quantizer},
      {"--lattice-q", f.lattice_q != defaults.lattice_q},
      {"--lattice-eps", f.lattice_eps != defaults.lattice_eps},
  };
  const auto own = protocol_flags(protocol);
  for (const auto& [flag, set] : changed) {
    if (!set || std::find(own.begin(), own.end(), flag) != own.end()) continue;
    std::string accepted;
    for (auto name : own) accepted += (accepted.empty() ? "" : ", ") + std::string(name);
    throw ConfigError(std::string(flag) + ": does not apply to --protocol " + protocol + " (its options: " +
                      (accepted.empty() ? "none" : accepted) + ")");
  }
}

}  // namespace avb::app
