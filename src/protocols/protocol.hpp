// The averaging protocol interface and the registry that makes protocols by name.
//
// A protocol sees one peer's vector and the round's context; it communicates only
// through round.world (so its traffic is counted) and draws randomness only from
// keyed streams (so results do not depend on call order). It never parses flags,
// prints, or touches HDF5.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/comm.hpp"
#include "protocols/group_allreduce.hpp"
#include "sim/failures.hpp"

namespace avb {

// What a protocol reports about the groups it formed in a round. Each group is
// counted once, by one of its members (its lowest-ranked alive member), so the sum
// over peers is the number of groups.
struct GroupCounters {
  int groups = 0;         // groups that attempted to average
  int failed_groups = 0;  // of those, groups whose averaging was cancelled by a failure
};

// Everything one averaging round may use.
struct Round {
  int t = 0;                      // round index, 1-based like the paper
  std::uint64_t seed = 0;         // the trial's seed: the key of every stream
  const FailureModel& failures;   // alive(t, peer) for any peer
  Comm& world;                    // this trial's communicator
  GroupCounters& counters;        // this peer's contribution to the round's counts
};

class Protocol {
 public:
  virtual ~Protocol() = default;
  // One round on this peer's vector; collective over round.world.
  virtual void step(std::span<double> x, Round& round) = 0;
  // Asynchronous protocols serve partners' requests here between local steps.
  virtual void progress() {}
};

// Options of every protocol; each reads the fields that concern it.
struct ProtocolOptions {
  std::string name = "allreduce";
  // Unset means the protocol's own default (ProtocolInfo::default_semantics).
  std::optional<FailureSemantics> on_failure;
  // The all-reduce algorithm used inside groups.
  Collective collective = Collective::automatic;
};

struct ProtocolInfo {
  std::string_view name;
  std::string_view summary;
  FailureSemantics default_semantics;
  std::vector<FailureSemantics> semantics;  // the ones it supports
};

// Every registered protocol, in a stable order.
std::vector<ProtocolInfo> protocol_catalog();
// "allreduce, moshpit, ..." for error messages.
std::string protocol_names();

// Checks `options` (known name, supported semantics) and fills in defaults.
// Throws ConfigError naming the flag and the accepted values.
ProtocolOptions resolve(const ProtocolOptions& options);

// Makes a protocol for one trial. `options` must be resolved; `world` is the
// communicator the protocol will be stepped on.
std::unique_ptr<Protocol> make_protocol(const ProtocolOptions& options, Comm& world);

// The resolved options as (key, value) pairs, for headers and traces.
std::vector<std::pair<std::string, std::string>> describe(const ProtocolOptions& options);

}  // namespace avb
