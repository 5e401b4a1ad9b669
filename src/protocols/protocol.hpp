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
#include "core/enum_names.hpp"
#include "protocols/options.hpp"
#include "protocols/round_report.hpp"
#include "protocols/resources.hpp"
#include "protocols/population.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"
#include "sim/topology.hpp"

namespace avb {

// What a protocol reports about the groups it formed in a round. Each group is
// counted once, by one of its members, so the sum over peers is the number of groups.
// Its `late` is 0 or 1: whether this peer's group went on without it.
struct GroupCounters : RoundReport {
  // This peer expected to exchange with a peer that is down this round, and waits
  // for the failure to be detected (docs/failures.md, detection timeout): 0 or 1.
  int waited_on_failure = 0;
};

// Everything one averaging round may use.
struct Round {
  int t = 0;                      // round index, 1-based like the paper
  std::uint64_t seed = 0;         // the trial's seed: the key of every stream
  const FailureModel& failures;   // alive(t, peer) for any peer
  Comm& world;                    // this trial's communicator
  GroupCounters& counters;        // this peer's contribution to the round's counts
  // A waiting policy other than `all` (null: none): the group protocols cut late
  // members and charge this peer's work by it (charge_work), before any message.
  const Arrivals* arrivals = nullptr;
  bool work_charged = false;  // set by charge_work; the runner charges the rest
  // Lets `seconds` of this peer's work pass on the simulated clock (nothing on a
  // real MPI), once per round.
  void charge_work(double seconds);
};

class Protocol {
 public:
  virtual ~Protocol() = default;
  // Called by the runners on every peer once per trial, before any other call,
  // with the peer's initial vector and the trial's seed. Asynchronous protocols
  // start serving partners here: a peer whose first round comes late (SGD with
  // geometric local steps) must still answer requests and take part in settle().
  virtual void begin_trial(std::span<const double> /*x*/, std::uint64_t /*seed*/) {}
  // One round on this peer's vector; collective over round.world.
  virtual void step(std::span<double> x, Round& round) = 0;
  // Asynchronous protocols serve partners' requests here, between local steps and
  // whenever they wait; x is this peer's current model, which a partner's request
  // may change.
  virtual void progress(std::span<double> /*x*/) {}
  // Collective over the trial's communicator: completes every interaction still in
  // flight. Runners call it before each measurement, so that the models measured
  // are settled. Synchronous protocols have nothing in flight between rounds.
  // Failures this peer noticed while serving are added to `counters`.
  virtual void settle(std::span<double> /*x*/, GroupCounters& /*counters*/) {}
  // Churn: a new peer took this slot and loaded `x` from a live peer (sim/churn.hpp);
  // a protocol with per-peer state beyond x starts it afresh from x.
  virtual void on_join(std::span<const double> /*x*/) {}
};

// Whether a protocol keeps working when departed peers' slots are taken by new
// peers (--failure churn, sim/churn.hpp).
enum class ChurnSupport {
  yes,
  averaging_only,  // refused in sgd_bench
  no,
};

// Makes a protocol for one trial on `world`, the communicator it will be stepped
// on, from options already resolved for world.size() peers.
using ProtocolFactory = std::unique_ptr<Protocol>(const ProtocolOptions& options, Comm& world);

// What a protocol's own file defines for its catalog row: its two forms and what
// it needs on a run's size.
struct ProtocolForms {
  ProtocolFactory* make = nullptr;
  // Its sequential form (protocols/population.hpp); nullptr when it has none.
  SequentialFactory* sequential = nullptr;
  // What it needs on a run's size (protocols/resources.hpp); nullptr: the
  // estimate takes an all-reduce over all peers, or a graph protocol's share.
  ResourceFunction* resources = nullptr;
};

// The forms of a protocol whose two classes are built from the options and the
// number of peers.
template <class MpiForm, class PopulationForm>
constexpr ProtocolForms forms_of(ResourceFunction* resources) {
  return {[](const ProtocolOptions& o, Comm& world) -> std::unique_ptr<Protocol> {
            return std::make_unique<MpiForm>(o, world.size());
          },
          [](const ProtocolOptions& o, int n_peers) -> std::unique_ptr<SequentialProtocol> {
            return std::make_unique<PopulationForm>(o, n_peers);
          },
          resources};
}

// One row of the catalog (protocols/catalog.cpp): everything the rest of the
// program knows about a protocol. Nothing outside the catalog switches on a name.
struct ProtocolInfo {
  std::string_view name;
  std::string_view summary;
  FailureSemantics default_semantics;
  std::vector<FailureSemantics> semantics;  // the ones it supports
  // The flags it takes beyond --protocol and --on-failure, in the order
  // describe() lists them; apps refuse the others.
  std::vector<std::string_view> flags;
  // Graph protocols (those that take --topology): the graph when none is given.
  std::optional<TopologyKind> default_topology;
  ChurnSupport churn = ChurnSupport::yes;
  std::string_view churn_refusal;  // why, when churn is not ChurnSupport::yes
  // Why it refuses --quantizer lattice (empty: it takes lattice when it takes --quantizer).
  std::string_view lattice_refusal;
  // Peers step at their own pace (rounds are not collective), so SGD peers may
  // take different numbers of local steps between rounds.
  bool asynchronous = false;
  // Whether a peer may wait out a partner that is down (--detection-timeout),
  // under these options; null: it may. No peer does where the partner draw or
  // the matching already sees the failures (docs/failures.md).
  bool (*waits_on_failure)(const ProtocolOptions&) = nullptr;
  // Gradient tracking (sgd_bench --gradient-tracking) runs over its rounds when
  // each replaces the peers' vectors by W x with W doubly stochastic and exact: the
  // peers' sum is kept, so the trackers keep the sum of the gradients. Under these
  // options, why not ("" when it does); null: never.
  std::string (*tracking_refusal)(const ProtocolOptions&) = nullptr;
  ProtocolForms forms;  // its factories and resources (forms.make is required)
};

// The catalog's waits_on_failure for `options` (resolved).
bool may_wait_on_failure(const ProtocolOptions& options);

// Every registered protocol, in a stable order.
const std::vector<ProtocolInfo>& protocol_catalog();
// The row of `name`; throws ConfigError naming --protocol and the accepted names.
const ProtocolInfo& protocol_info(std::string_view name);
// "allreduce, moshpit, ..." for error messages.
std::string protocol_names();

// Checks `options` for a run on n_peers peers (known name, supported semantics,
// ranges, a grid with room for everyone) and fills in defaults. Throws ConfigError
// naming the flag and the accepted values.
ProtocolOptions resolve(const ProtocolOptions& options, int n_peers);

// Refuses a failure kind the protocol cannot run under (churn: the catalog's
// ChurnSupport); `training` for sgd_bench. Throws ConfigError naming --failure.
void check_failure_support(std::string_view protocol, FailureKind kind, bool training);

// Makes a protocol for one trial on `world`, the communicator it will be stepped on;
// `options` as resolve() returned them for world.size() peers (resolved once per run).
std::unique_ptr<Protocol> make_protocol(const ProtocolOptions& options, Comm& world);

// What the protocol of `options` (resolved for query.peers) needs: its catalog
// row's resources function, or the fallback named there.
ProtocolResources protocol_resources(const ProtocolOptions& options, const ResourceQuery& query);

// The flags that apply to a protocol beyond --protocol and --on-failure, e.g.
// {"--grid", "--placement", ...} for moshpit; apps refuse the others.
std::vector<std::string_view> protocol_flags(std::string_view name);
// Whether `name` takes `flag` (e.g. takes(name, "--topology") for graph protocols).
bool takes(std::string_view name, std::string_view flag);

// The resolved options that concern the protocol, as (key, value) pairs, for
// headers and traces.
std::vector<std::pair<std::string, std::string>> describe(const ProtocolOptions& options);

}  // namespace avb
