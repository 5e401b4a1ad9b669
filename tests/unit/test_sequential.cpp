// The sequential engine (run/sequential.hpp): quantized butterflies, results that
// do not depend on the thread count, a stop request, computation and stragglers,
// platforms, and the settings it refuses. (Every protocol's population form is
// held to its MPI form peer by peer and round by round in
// tests/mpi/test_protocol_forms.cpp, and to its theory by its case table's
// [theory] suites.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "protocols/event_round.hpp"
#include "protocols/gossip.hpp"
#include "run/sequential.hpp"
#include "test_support.hpp"

namespace avb {
namespace {

struct Case {
  const char* protocol;
  const char* semantics = "survivors";
  const char* kind = "transient";
  double rate = 0.1;
  int dim = 1;
  const char* extra = "";  // "grid=AxB", "chunk", "topology=T", "quantizer=Q", "group=G", "collective=C", "churn"
};

bool has(const Case& c, const std::string& what) { return std::string(c.extra).find(what) != std::string::npos; }

std::string value_of(const Case& c, const std::string& key) {
  const std::string extra = c.extra;
  const auto at = extra.find(key + "=");
  if (at == std::string::npos) return "";
  const auto end = extra.find(' ', at);
  return extra.substr(at + key.size() + 1, end == std::string::npos ? std::string::npos : end - at - key.size() - 1);
}

AveragingOptions options_for(const Case& c, int n) {
  AveragingOptions o;
  o.protocol.name = c.protocol;
  o.protocol.on_failure = parse_failure_semantics(c.semantics);
  o.failure = has(c, "churn") ? FailureKind::churn : parse_failure_kind(c.kind);
  o.join_rate = has(c, "churn") ? 0.5 : 0.0;
  o.fail_rate = c.rate;
  o.dim = c.dim;
  if (!value_of(c, "grid").empty()) o.protocol.moshpit.grid = parse_grid(value_of(c, "grid"));
  if (has(c, "chunk")) o.protocol.moshpit.key_update = KeyUpdate::chunk;
  if (!value_of(c, "topology").empty()) o.protocol.topology = parse_topology(value_of(c, "topology"));
  if (!value_of(c, "quantizer").empty()) o.protocol.quantizer = parse_quantizer(value_of(c, "quantizer"), 8, 0.05);
  if (!value_of(c, "group").empty()) o.protocol.random_groups.group_size = std::stoi(value_of(c, "group"));
  if (!value_of(c, "collective").empty()) o.protocol.collective = parse_collective(value_of(c, "collective"));
  if (std::string(c.protocol) == "choco") o.protocol.choco.gamma = 0.5;
  o.rounds = 12;
  o.trials = 2;
  o.seed = 99;
  return resolve(o, n);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// fp16 carries 2 bytes a coordinate and no header: a quantized moshpit round sends
// exactly a quarter of the plain one's bytes and lands within fp16's rounding of it.
TEST(QuantizedButterfly, Fp16SendsAQuarterOfTheBytesAndRoundsTheValues) {
  const int n = 16, dim = 8;
  AveragingOptions plain = options_for(Case{"moshpit", "survivors", "transient", 0.0, dim}, n);
  AveragingOptions coded = options_for(Case{"moshpit", "survivors", "transient", 0.0, dim, "quantizer=fp16"}, n);
  const FailureModel failures(7, 0.0, FailureKind::transient, n, 0.0);
  Population a(n, dim), b(n, dim);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < dim; ++k) a.peer(i)[static_cast<std::size_t>(k)] = initial_value(7, i, k);
  b.values = a.values;
  std::vector<std::uint8_t> alive;
  failures.alive_mask(1, alive);
  const auto pa = make_sequential_protocol(plain.protocol, n), pb = make_sequential_protocol(coded.protocol, n);
  pa->begin_trial(a, 7);
  pb->begin_trial(b, 7);
  const Hosts hosts(PlatformModel{}, n);
  LinkLoads ta(hosts, n), tb(hosts, n);
  PopulationRound ra{1, 7, failures, alive}, rb{1, 7, failures, alive};
  ra.links = &ta;
  rb.links = &tb;
  const RoundEffect ea = pa->step(a, ra);
  const RoundEffect eb = pb->step(b, rb);
  EXPECT_EQ(ea.bytes, 4 * eb.bytes);
  EXPECT_LT(tb.take_seconds(), ta.take_seconds());
  int differ = 0;
  for (std::size_t k = 0; k < a.values.size(); ++k) {
    differ += same_bits(a.values[k], b.values[k]) ? 0 : 1;
    EXPECT_NEAR(b.values[k], a.values[k], 2e-3 * (1.0 + std::abs(a.values[k])));
  }
  EXPECT_GT(differ, 0) << "fp16 must change some values";
}

TEST(QuantizedButterfly, LatticeIsRefusedNamingTheFlag) {
  for (const char* name : {"moshpit", "random-groups", "allreduce"}) {
    ProtocolOptions o;
    o.name = name;
    o.quantizer = parse_quantizer("lattice");
    try {
      resolve(o, 16);
      ADD_FAILURE() << name << " accepted --quantizer lattice";
    } catch (const ConfigError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("--quantizer: lattice", 0), 0u) << message;
      EXPECT_NE(message.find("uniform8"), std::string::npos) << message;
    }
  }
}

// Whole runs: the rows run_averaging_sequential records are run_sequential_trial's,
// trial by trial, and do not depend on the thread count.
TEST(SequentialRun, RowsDoNotDependOnTheThreadCount) {
  AveragingOptions o;
  o.protocol.name = "moshpit";
  o.protocol.moshpit.grid = {32, 32};
  o.fail_rate = 0.01;
  o.trials = 6;
  o.rounds = 10;
  o = resolve(o, 1024);
  AveragingObserver ignore;
  const AveragingResult one = run_averaging_sequential(o, 1024, ignore, 1);
  const AveragingResult three = run_averaging_sequential(o, 1024, ignore, 3);
  ASSERT_EQ(one.trials.size(), 6u);
  ASSERT_EQ(three.trials.size(), 6u);
  for (int k = 0; k < o.trials; ++k) {
    const TrialRecord want = run_sequential_trial(o, 1024, k);
    const TrialRecord& got = one.trials[static_cast<std::size_t>(k)];
    ASSERT_EQ(got.rows.size(), want.rows.size());
    for (std::size_t t = 0; t < got.rows.size(); ++t) {
      const RoundRow &g = got.rows[t], &w = want.rows[t], &other = three.trials[static_cast<std::size_t>(k)].rows[t];
      EXPECT_EQ(g.groups, w.groups);
      EXPECT_EQ(g.failed_groups, w.failed_groups);
      EXPECT_EQ(g.alive, w.alive);
      EXPECT_EQ(g.bytes_sent, w.bytes_sent);
      EXPECT_TRUE(same_bits(g.error, w.error)) << "trial " << k << " round " << t;
      EXPECT_TRUE(same_bits(g.variance, other.variance) && same_bits(g.time, other.time)) << "trial " << k;
    }
    for (std::size_t i = 0; i < got.targets.size(); ++i) EXPECT_EQ(got.targets[i].rounds, want.targets[i].rounds);
    EXPECT_GT(got.rows.back().time, 0.0);
  }
}

class StopAfterFirstTrial : public AveragingObserver {
 public:
  void on_trial(const TrialRecord& /*trial*/) override { stop_ = true; }
  bool stop_requested() override { return stop_; }

 private:
  bool stop_ = false;
};

TEST(SequentialRun, StopRequestEndsTheRunAndMarksTrialsInFlightIncomplete) {
  AveragingOptions o;
  o.protocol.name = "gossip";
  o.trials = 50;
  o.rounds = 400;
  o = resolve(o, 512);
  StopAfterFirstTrial observer;
  const AveragingResult result = run_averaging_sequential(o, 512, observer, 2);
  EXPECT_TRUE(result.stopped);
  ASSERT_GE(result.trials.size(), 1u);
  EXPECT_LT(result.trials.size(), 50u);
  EXPECT_TRUE(result.trials.front().complete);
  for (std::size_t k = 0; k < result.trials.size(); ++k) {
    EXPECT_EQ(result.trials[k].index, static_cast<int>(k));
    if (k + 1 < result.trials.size()) {
      EXPECT_TRUE(result.trials[k].complete) << "only the last may be cut short";
    }
  }
}

// Computation (--compute-flops) on the sequential engine: each round waits for its
// slowest alive peer's work at the host speed, a straggler's slowed down; values
// and bytes do not change.
TEST(SequentialRun, ComputationAddsTheSlowestAlivePeersWorkToEveryRound) {
  AveragingOptions o;
  o.protocol.name = "moshpit";
  o.protocol.moshpit.grid = {8, 8};
  o.rounds = 6;
  o.trials = 1;
  o = resolve(o, 64);
  const PlatformModel platform{.host_speed = 2e9};
  auto run = [&] {
    AveragingObserver ignore;
    return run_averaging_sequential(o, 64, ignore, 1, platform).trials.at(0);
  };
  const TrialRecord idle = run();
  o.compute_flops = 1e7;
  const TrialRecord busy = run();
  o.stragglers = {.fraction = 0.1, .slowdown = 8};
  const TrialRecord slow = run();
  ASSERT_EQ(busy.rows.size(), idle.rows.size());
  ASSERT_EQ(slow.rows.size(), idle.rows.size());
  for (std::size_t t = 0; t < idle.rows.size(); ++t) {
    EXPECT_TRUE(same_bits(busy.rows[t].variance, idle.rows[t].variance));
    EXPECT_EQ(busy.rows[t].bytes_sent, idle.rows[t].bytes_sent);
    EXPECT_NEAR(busy.rows[t].time - idle.rows[t].time, t * 1e7 / 2e9, 1e-12) << "round " << t;
    // 64 peers at 10%: some straggle (the same ones as on the MPI engines).
    EXPECT_NEAR(slow.rows[t].time - idle.rows[t].time, t * 8e7 / 2e9, 1e-12) << "round " << t;
  }
  const Stragglers stragglers(trial_seed(o.seed, 0), o.stragglers);
  int slow_peers = 0;
  for (int i = 0; i < 64; ++i) slow_peers += stragglers.factor(i) > 1 ? 1 : 0;
  EXPECT_GT(slow_peers, 0);
}

// The settle barrier's end in closed form (one region: every token takes the
// same time) equals the dissemination barrier played step by step, to the bit.
TEST(EventRound, BarrierEndInClosedFormEqualsTheBarrierStepByStep) {
  std::mt19937_64 rng(5);  // the entries' draws; any seed
  std::uniform_real_distribution<double> entry(-0.3, 1.7);
  for (const int n : {1, 2, 3, 6, 64, 100, 1000}) {
    const Hosts hosts(PlatformModel{}, n);
    const Transit transit(hosts, n);
    ASSERT_TRUE(transit.empty_seconds().has_value());
    std::vector<double> entries(static_cast<std::size_t>(n));
    for (double& t : entries) t = entry(rng);
    EXPECT_EQ(barrier_end(entries, transit), barrier_end_by_steps(entries, transit)) << "n " << n;
    for (double& t : entries) t = -1.0 - t;  // every peer entered before the last start: the barrier ends at 0
    EXPECT_EQ(barrier_end(entries, transit), barrier_end_by_steps(entries, transit)) << "n " << n;
  }
}

// The slowest alive peer: a straggler that is down does not hold the round up.
TEST(ComputeClock, ADownStragglerDoesNotCount) {
  const StragglerSpec spec{.fraction = 0.5, .slowdown = 4};
  const std::uint64_t seed = 11;
  const Hosts hosts(PlatformModel{}, 8);
  const ComputeClock clock(seed, spec, 8, 1e6, hosts);
  const Stragglers stragglers(seed, spec);
  std::vector<std::uint8_t> alive(8, 1);
  EXPECT_DOUBLE_EQ(clock.seconds(alive), 4e-3);
  for (int i = 0; i < 8; ++i) alive[static_cast<std::size_t>(i)] = stragglers.factor(i) > 1 ? 0 : 1;
  ASSERT_NE(std::count(alive.begin(), alive.end(), 1), 8);
  ASSERT_NE(std::count(alive.begin(), alive.end(), 1), 0) << "pick a seed with both kinds";
  EXPECT_DOUBLE_EQ(clock.seconds(alive), 1e-3);
  std::fill(alive.begin(), alive.end(), 0);
  EXPECT_DOUBLE_EQ(clock.seconds(alive), 0.0);
  EXPECT_DOUBLE_EQ(ComputeClock(seed, spec, 8, 0.0, hosts).seconds(std::vector<std::uint8_t>(8, 1)), 0.0);
}

// A peer that waits out a failure finishes its round `timeout` after its work: the
// round ends with the latest of them, not with the slowest worker plus the timeout
// (SMPI's rounds with stragglers and detection agreed only to 6% before).
TEST(ComputeClock, TheRoundEndsWithTheLatestPeerWorkAndWaitTogether) {
  const StragglerSpec spec{.fraction = 0.5, .slowdown = 4};
  const std::uint64_t seed = 11;
  const Stragglers stragglers(seed, spec);
  int fast = -1, slow = -1;
  for (int i = 0; i < 8; ++i) (stragglers.factor(i) > 1 ? slow : fast) = i;
  ASSERT_GE(fast, 0);
  ASSERT_GE(slow, 0);
  const Hosts hosts(PlatformModel{}, 8);
  const ComputeClock clock(seed, spec, 8, 1e6, hosts);  // 1 ms a step, 4 ms for a straggler
  const std::vector<std::uint8_t> alive(8, 1);
  DetectionClock detection(8, 2e-3);
  detection.begin_round()[static_cast<std::size_t>(fast)] = 1;
  detection.end_round();
  EXPECT_DOUBLE_EQ(clock.slowest(alive, detection), 4e-3);             // the straggler: 4 > 1 + 2
  EXPECT_DOUBLE_EQ(clock.slowest(alive, detection, 3), 12e-3);         // three steps: 12 > 3 + 2
  detection.begin_round()[static_cast<std::size_t>(slow)] = 1;
  detection.end_round();
  EXPECT_DOUBLE_EQ(clock.slowest(alive, detection), 6e-3);             // the straggler waits too
  EXPECT_DOUBLE_EQ(detection.detection_time(), 2e-3);
  DetectionClock long_wait(8, 0.5);
  long_wait.begin_round()[static_cast<std::size_t>(fast)] = 1;
  long_wait.end_round();
  EXPECT_DOUBLE_EQ(clock.slowest(alive, long_wait), 0.501);            // the waiting peer: 1 + 500 > 4
  EXPECT_DOUBLE_EQ(ComputeClock(seed, spec, 8, 0.0, hosts).slowest(alive, long_wait), 0.5);
}

// Lognormal hosts are scripts/avbench platform's, bit for bit: these are the first
// hosts of `avbench platform 4 DIR --kind cloud` (seed 1), whose XML prints every digit.
TEST(Hosts, LognormalHostsAreThePlatformFilesOnes) {
  const PlatformModel cloud{.speed_sigma = 0.5, .bandwidth_sigma = 0.5, .seed = 1};
  EXPECT_EQ(cloud.speed_of(0), 890242075.6668112);
  EXPECT_EQ(cloud.bandwidth_of(0), 133287540.6445245);
  EXPECT_EQ(cloud.speed_of(1), 396549894.5493077);
  EXPECT_EQ(cloud.bandwidth_of(3), 166803629.38763258);
  const Hosts hosts(cloud, 4);
  EXPECT_EQ(hosts.speed(1), cloud.speed_of(1));
  EXPECT_EQ(hosts.bandwidth(3), cloud.bandwidth_of(3));
  EXPECT_EQ(slowest_hosts(cloud, 4).host_speed, 396549894.5493077);
  EXPECT_EQ(slowest_hosts(cloud, 4).bandwidth, 133287540.6445245);
  // Work waits for the slowest alive host.
  const ComputeClock clock(1, StragglerSpec{}, 4, 1e6, hosts);
  EXPECT_DOUBLE_EQ(clock.seconds(std::vector<std::uint8_t>(4, 1)), 1e6 / 396549894.5493077);
  EXPECT_DOUBLE_EQ(clock.seconds(std::vector<std::uint8_t>{1, 0, 1, 1}), 1e6 / 890242075.6668112);
}

// avbench platform's geo: every step crosses a region boundary, so it pays the other
// backbone's and the wide-area link's latency; the busiest wide-area link carries
// a whole message or 2/R^2 of the step's bytes (the run's estimate, before it
// starts; one region is the cluster).
TEST(GeoPlatform, StepsCrossRegionsAndTheWideAreaLinkBoundsBigSteps) {
  MessagePattern small{3, 800, 800}, big{4, 8e6, 8e6};
  PlatformModel cluster, geo;
  geo.regions = 4;
  for (const auto& [pattern, bytes] : {std::pair{small, 64 * 800.0}, std::pair{big, 64 * 8e6}}) {
    const RoundTime c = round_time(pattern, bytes, cluster), g = round_time(pattern, bytes, geo);
    EXPECT_EQ(c.wan_latency + c.wan_transfer, 0.0);
    EXPECT_DOUBLE_EQ(g.backbone_latency, 2 * c.backbone_latency);
    EXPECT_DOUBLE_EQ(g.wan_latency / g.backbone_latency, geo.wan_latency / (2 * geo.backbone_latency));
  }
  // 8 MB messages, 128 MB a step over 4 regions: 16 MB on the busiest wide-area
  // link, against 8 MB on a peer's link at a twentieth of the bandwidth (and more
  // than the TCP window lets one message take: 8e6 x 2 x 41.1 ms / 4 MiB).
  geo.wan_bandwidth = 5e7;
  const RoundTime slow = round_time(big, 64 * 8e6, geo);
  geo.wan_bandwidth = 1e8;
  const RoundTime fast = round_time(big, 64 * 8e6, geo);
  EXPECT_GT(slow.wan_transfer, 0.0);
  EXPECT_EQ(slow.link_transfer + slow.backbone_transfer, 0.0);
  EXPECT_DOUBLE_EQ(slow.wan_transfer, 2 * fast.wan_transfer);
  EXPECT_DOUBLE_EQ(slow.wan_transfer / round_time(big, 64 * 8e6, cluster).link_transfer,
                   (16e6 / 5e7) / (8e6 / cluster.bandwidth));
}

}  // namespace
}  // namespace avb
