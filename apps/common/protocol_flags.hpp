// The flags that choose and tune a protocol and its failures, shared by
// averaging_bench and sgd_bench so that both read them alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/cli_fwd.hpp"
#include "common/typed_options.hpp"
#include "protocols/protocol.hpp"
#include "run/options.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"
#include "sim/topology.hpp"

namespace avb::app {

// Typed fields, each converted as CLI11 reads it (typed_options.hpp), so that every
// refusal is one line that starts with the flag and says what is accepted.
struct ProtocolFlags {
  std::string protocol = "allreduce";  // checked against the catalog by resolve()
  double fail_rate = 0;
  FailureKind failure = FailureKind::transient;
  double join_rate = 0;
  std::string availability;  // --availability FILE; empty: none
  double stragglers = 0;
  double straggler_slowdown = 4;
  double straggler_sigma = 0;
  double detection_timeout = 0;
  double round_timeout = 300;
  std::optional<FailureSemantics> on_failure;  // unset: the protocol's own
  Collective collective = Collective::automatic;
  GroupForm groups = GroupForm::view;
  std::vector<int> grid;  // empty: the default grid
  Placement placement = Placement::random;
  KeyUpdate key_update = KeyUpdate::axis;
  int group_size = 32;
  int min_group_size = 2;
  std::optional<TopologySpec> topology;  // unset: the protocol's default
  Weights weights = Weights::uniform;
  AliveWeights alive_weights = AliveWeights::renormalize;
  SwarmMode mode = SwarmMode::blocking;
  SwarmClock clock = SwarmClock::round;
  double gamma = 1;
  WaitSpec wait;
  std::string quantizer = "none";  // parsed with --lattice-q and --lattice-eps
  long long lattice_q = kDefaultLatticeQ;
  double lattice_eps = kDefaultLatticeEps;
  ChangedFlags changed;  // the flags above given a value other than their default
  FlagTable declared;    // every typed flag of the program, for --list-flags
};

// Adds the flags under the help groups "Protocol" and "Failures".
void add_protocol_flags(CLI::App& app, ProtocolFlags& flags);

// The protocol's options (unresolved); the quantizer is parsed here, with its lattice.
ProtocolOptions protocol_options(const ProtocolFlags& flags);
StragglerSpec straggler_spec(const ProtocolFlags& flags);
// The protocol's part of the options both programs share: the protocol, its
// failures and timeouts.
void set_protocol_options(const ProtocolFlags& protocol, RunOptions& options);

// A flag that does not apply to the chosen protocol (the catalog's
// protocol_flags()) is refused rather than silently ignored (the run would not be
// the one the user asked for). A default value is let through: a trace's recorded
// config lists every flag, and must replay.
void refuse_foreign_flags(const ProtocolFlags& flags, const std::string& protocol);

}  // namespace avb::app
