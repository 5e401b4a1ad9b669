// The sequential engine's time column, message by message (protocols/link_loads.hpp,
// sim/fluid.hpp): each phase against its α–β value worked out by hand from the
// platform, a slow host slowing only its partners, a butterfly charged as its
// messages, a ring between two regions charged for the two wide-area crossings it
// makes, the TCP window across a wide-area link, SimGrid's weighted sharing, and
// each peer's own clock through a round (flows that start when their ends are ready).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <vector>

#include "core/rng.hpp"
#include "collectives/butterfly_allreduce.hpp"
#include "protocols/link_loads.hpp"
#include "sim/fluid.hpp"

namespace avb {
namespace {

// One phase's seconds: latency of the route, the busiest link's bytes (with the
// acknowledgements of the flows coming the other way) or the TCP window, scaled
// by SMPI's factors of the message.
double phase_seconds(double message, double latency, double busiest_seconds, double windowed_seconds = 0,
                     double acknowledgements = kAcknowledgements) {
  const SmpiFactors f = smpi_factors(message);
  return f.latency * latency + std::max(acknowledgements * busiest_seconds, windowed_seconds) / f.bandwidth;
}
// A flow alone on its links: no acknowledgements share them.
double lone_seconds(double message, double latency, double transfer_seconds) {
  return phase_seconds(message, latency, transfer_seconds, 0, 1.0);
}

PlatformModel geo_with(int regions, double wan_bandwidth) {
  PlatformModel geo;
  geo.regions = regions;
  geo.wan_bandwidth = wan_bandwidth;
  return geo;
}

TEST(LinkLoads, OneMessageIsItsAlphaBetaCost) {
  const PlatformModel cluster;
  const Hosts hosts(cluster, 4);
  LinkLoads links(hosts, 4);
  links.send(0, 1, 8e6);
  const double latency = 2 * cluster.link_latency + cluster.backbone_latency;
  EXPECT_DOUBLE_EQ(links.take_seconds(), lone_seconds(8e6, latency, 8e6 / cluster.bandwidth));
  EXPECT_EQ(links.take_seconds(), 0.0);  // taken: the next round starts afresh
  // Two phases, the second repeated 3 times, the same peer in both. A host's link
  // is split-duplex: an exchange of 1 MB each way puts 1 MB and the other's
  // acknowledgements on it.
  links.send(0, 1, 1e6);
  links.send(1, 0, 1e6);
  links.phase(3);
  links.send(1, 2, 5e5);
  const double exchange = phase_seconds(1e6, latency, 1e6 / cluster.bandwidth);
  const double lone = lone_seconds(5e5, latency, 5e5 / cluster.bandwidth);
  EXPECT_NEAR(links.take_seconds(), exchange + 3 * lone, 1e-12);
  // Peers that the first phase leaves alone start the second at once: the round
  // lasts as long as the longer of the two.
  links.send(0, 1, 1e6);
  links.send(1, 0, 1e6);
  links.phase(3);
  links.send(2, 3, 5e5);
  EXPECT_NEAR(links.take_seconds(), std::max(exchange, 3 * lone), 1e-12);
}

// A platform file's regions (RegionTable): each region's own link latency and
// backbone, and a route of two wide-area links whose slowest bounds the message.
TEST(LinkLoads, ListedRegionsChargeTheirOwnBackbonesAndRoutes) {
  auto table = std::make_shared<RegionTable>();
  table->regions = {{0, 50e-6, 2.25e9, 500e-6}, {2, 100e-6, 1e6, 1e-3}, {3, 80e-6, 1e9, 200e-6}};
  table->links = {{5e6, 0.01}, {1e9, 0.02}, {1e8, 0.04}};
  table->routes.assign(9, {});
  auto route = [&](int a, int b, std::vector<int> links) {
    table->routes[static_cast<std::size_t>(a * 3 + b)] = links;
    table->routes[static_cast<std::size_t>(b * 3 + a)] = links;
  };
  route(0, 1, {2});
  route(0, 2, {0, 1});
  route(1, 2, {1});
  PlatformModel platform;
  platform.regions = 3;
  platform.listed_regions = table;
  EXPECT_EQ(platform.region_of(1, 4), 0);
  EXPECT_EQ(platform.region_of(2, 4), 1);
  EXPECT_EQ(platform.region_of(3, 4), 2);
  const Hosts hosts(platform, 4);
  LinkLoads links(hosts, 4);
  const double bandwidth = platform.bandwidth;
  // Inside region 0: its links and backbone.
  links.send(0, 1, 8e6);
  EXPECT_DOUBLE_EQ(links.take_seconds(), lone_seconds(8e6, 2 * 50e-6 + 500e-6, 8e6 / bandwidth));
  // Into region 1, whose backbone is the slowest link on the way, and shared: the
  // message's own acknowledgements cross it too.
  const double into_1 = 50e-6 + 500e-6 + 0.04 + 1e-3 + 100e-6;
  EXPECT_DOUBLE_EQ(platform.route_latency(0, 1), into_1);
  links.send(0, 2, 8e6);
  EXPECT_DOUBLE_EQ(links.take_seconds(), phase_seconds(8e6, into_1, 8e6 / 1e6));
  // Into region 2 through two wide-area links: latencies add, the slower binds.
  const double into_2 = 50e-6 + 500e-6 + 0.01 + 0.02 + 200e-6 + 80e-6;
  EXPECT_DOUBLE_EQ(platform.route_latency(2, 0), into_2);
  links.send(3, 0, 8e6);
  EXPECT_DOUBLE_EQ(links.take_seconds(), phase_seconds(8e6, into_2, 8e6 / 5e6));
  // The estimate's platform: the slowest backbone and wide-area link, the longest latencies.
  const PlatformModel slowest = slowest_hosts(platform, 4);
  EXPECT_EQ(slowest.listed_regions, nullptr);
  EXPECT_EQ(slowest.regions, 3);
  EXPECT_EQ(slowest.backbone, 1e6);
  EXPECT_EQ(slowest.wan_bandwidth, 5e6);
  EXPECT_DOUBLE_EQ(slowest.wan_latency, 0.04);
  EXPECT_EQ(slowest.link_latency, 100e-6);
}

// Each peer's clock (LinkLoads::start_round, finish_round): a peer that waits out
// a failure's detection does so after its own messages, beside the others'; a
// straggler holds back only the messages it takes part in; a phase repeated
// goes on when the last of the peers it joins is ready.
TEST(LinkLoads, EachPeerKeepsItsOwnClock) {
  const PlatformModel cluster;
  const Hosts hosts(cluster, 4);
  LinkLoads links(hosts, 4);
  const double latency = 2 * cluster.link_latency + cluster.backbone_latency;
  const double lone = lone_seconds(8e6, latency, 8e6 / cluster.bandwidth);
  const std::vector<std::uint8_t> third_waits{0, 0, 1, 0}, first_waits{1, 0, 0, 0};
  const double timeout = 0.5;
  // Peer 2 sends nothing and waits: its wait overlaps 0's message to 1.
  links.start_round(nullptr);
  links.send(0, 1, 8e6);
  EXPECT_NEAR(links.finish_round(timeout, third_waits, timeout), std::max(lone, timeout), 1e-12);
  // Peer 0 waits after its message.
  links.start_round(nullptr);
  links.send(0, 1, 8e6);
  EXPECT_NEAR(links.finish_round(timeout, first_waits, timeout), lone + timeout, 1e-12);
  // Peer 0 is ready at 1 s: its message to 1 starts then, 2's to 3 at once; 1's
  // to 2 in the next phase waits for 1.
  links.start_round([](int peer) { return peer == 0 ? 1.0 : 0.0; });
  links.send(0, 1, 8e6);
  links.send(2, 3, 8e6);
  EXPECT_NEAR(links.finish_round(1.0), 1.0 + lone, 1e-12);
  links.start_round([](int peer) { return peer == 0 ? 1.0 : 0.0; });
  links.send(0, 1, 8e6);
  links.phase();
  links.send(1, 2, 8e6);
  EXPECT_NEAR(links.finish_round(1.0), 1.0 + 2 * lone, 1e-12);
  // Two pairs exchange twice (a phase of 2): the late pair's second exchange waits
  // for its first, the other pair is done at twice an exchange.
  const double exchange = phase_seconds(8e6, latency, 8e6 / cluster.bandwidth);
  links.start_round([](int peer) { return peer < 2 ? 1.0 : 0.0; });
  links.phase(2);
  for (int p : {0, 1, 2, 3}) links.send(p, p ^ 1, 8e6);
  EXPECT_NEAR(links.finish_round(1.0), 1.0 + 2 * exchange, 1e-12);
  links.start_round(nullptr);
  links.phase(2);
  links.send(2, 3, 8e6);
  links.send(3, 2, 8e6);
  EXPECT_NEAR(links.finish_round(0.0), 2 * exchange, 1e-12);
  // A joiner's load comes before its work: it is done at the load's end plus its
  // 1 s of work, not later.
  links.start_round([](int peer) { return peer == 1 ? 1.0 : 0.0; });
  links.before_work();
  links.send(0, 1, 8e6);
  links.phase();
  EXPECT_NEAR(links.finish_round(1.0), 1.0 + lone, 1e-12);
}

TEST(LinkLoads, ASlowHostSlowsOnlyThoseWhoTalkToIt) {
  PlatformModel listed;
  listed.listed_bandwidths = std::make_shared<const std::vector<double>>(std::vector<double>{1e7, 125e6, 125e6, 125e6});
  const Hosts hosts(listed, 4);
  LinkLoads links(hosts, 4);
  const double latency = 2 * listed.link_latency + listed.backbone_latency;
  links.send(2, 3, 1e6);
  EXPECT_DOUBLE_EQ(links.take_seconds(), lone_seconds(1e6, latency, 1e6 / 125e6));
  links.send(2, 3, 1e6);
  links.send(1, 0, 1e6);
  EXPECT_DOUBLE_EQ(links.take_seconds(), lone_seconds(1e6, latency, 1e6 / 1e7));
}

// A butterfly's messages and loads in closed form (by region) against its
// messages one by one.
TEST(LinkLoads, AButterflyIsChargedAsItsMessages) {
  const PlatformModel geo = geo_with(5, 3e8);
  const int n = 100;
  const Hosts hosts(geo, n);
  const Stream draws(7, StreamId::group_shuffle);
  for (int m : {2, 3, 17, 70}) {  // 70: too many messages to simulate flow by flow
    std::vector<int> peers(n);
    std::iota(peers.begin(), peers.end(), 0);
    for (int i = n - 1; i > 0; --i)
      std::swap(peers[static_cast<std::size_t>(i)],
                peers[draws.below(static_cast<std::uint64_t>(i) + 1, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(i), 0)]);
    const std::vector<int> members(peers.begin(), peers.begin() + m);
    std::vector<double> parts;
    for (int k = 0; k < m; ++k) parts.push_back(8.0 * static_cast<double>(butterfly_part(100003, m, k).size()));
    LinkLoads closed(hosts, n), one_by_one(hosts, n);
    closed.butterfly(members, parts);
    for (int i = 0; i < m; ++i)
      for (int k = 0; k < m; ++k)
        if (i != k) one_by_one.send(members[static_cast<std::size_t>(i)], members[static_cast<std::size_t>(k)], parts[static_cast<std::size_t>(k)]);
    const double a = closed.take_seconds(), b = one_by_one.take_seconds();
    EXPECT_NEAR(a, b, 1e-6 * b) << m << " members";
    EXPECT_GT(a, 0.0);
  }
}

// avbench platform's geo with 2 regions of 8 peers and a slow wide-area link: a ring
// all-reduce crosses it twice a step (7 -> 8 and 15 -> 0), each a chunk; the
// spread estimate of the old model put 8 chunks on it.
TEST(LinkLoads, ARingBetweenTwoRegionsCrossesTwiceAStep) {
  const PlatformModel geo = geo_with(2, 1e8);
  const int n = 16;
  const Hosts hosts(geo, n);
  LinkLoads links(hosts, n);
  std::vector<int> members(n);
  std::iota(members.begin(), members.end(), 0);
  const std::size_t dim = 1600000;  // 100,000 doubles a chunk: two segments each
  links.collective(Collective::ring, members, dim);
  const double chunk = 8.0 * 100000;
  const double crossing = 2 * geo.link_latency + 2 * geo.backbone_latency + geo.wan_latency;
  const double window = chunk / 2 * 2 * crossing / kTcpWindow;  // a segment's
  const double expected = 2 * (n - 1) * phase_seconds(chunk / 2, crossing, 2 * chunk / 1e8, window);
  EXPECT_NEAR(links.take_seconds(), expected, 1e-12 * expected);  // its steps one after another
}

// A message across regions goes no faster than SimGrid's TCP window over its
// route's latency: 4 MiB / (2 x 41.1 ms), about 51 MB/s, below a host's 125 MB/s.
TEST(LinkLoads, TheTcpWindowHoldsBackAMessageBetweenRegions) {
  const PlatformModel geo = geo_with(4, PlatformModel{}.wan_bandwidth);
  const Hosts hosts(geo, 4);
  LinkLoads links(hosts, 4);
  const double bytes = 102.4e6;
  links.send(0, 1, bytes);  // one host per region
  const double crossing = 2 * geo.link_latency + 2 * geo.backbone_latency + geo.wan_latency;
  const double window = bytes * 2 * crossing / kTcpWindow;
  EXPECT_GT(window, kAcknowledgements * bytes / geo.bandwidth);
  EXPECT_DOUBLE_EQ(links.take_seconds(), phase_seconds(bytes, crossing, bytes / geo.bandwidth, window));
}

// SimGrid's sharing, worked out by hand. A link of 100 B/s, flows of 100 bytes.
TEST(FluidNetwork, ALoneFlowMovesAtItsBoundAfterItsLatency) {
  FluidNetwork net;
  const int link = net.add_link(100);
  net.add_flow({.bytes = 100, .latency = 0.5, .bound = 40, .penalty = 1, .factor = 0.8, .route = {link}, .back = {}, .after = {}});
  EXPECT_DOUBLE_EQ(net.run(), 0.5 + 100 / (40 * 0.8));
  net.add_flow({.bytes = 100, .latency = 0, .bound = 1e9, .penalty = 1, .factor = 1, .route = {link}, .back = {}, .after = {}});
  EXPECT_DOUBLE_EQ(net.run(), 1.0);  // the flows of a run are gone after it
}

// Shares go as 1 / penalty: the local flow (penalty 1) takes 100/1.1 B/s and ends
// at 1.1 s, the distant one (penalty 10) has moved 10 bytes by then, and its last
// 90 go at its bound of 20 B/s: 5.6 s (equal shares would end at 5.0 s).
TEST(FluidNetwork, ALongRouteYieldsToAShortOneAndThenMovesAtItsWindow) {
  FluidNetwork net;
  const int link = net.add_link(100);
  net.add_flow({.bytes = 100, .latency = 0, .bound = 1e9, .penalty = 1, .factor = 1, .route = {link}, .back = {}, .after = {}});
  net.add_flow({.bytes = 100, .latency = 0, .bound = 20, .penalty = 10, .factor = 1, .route = {link}, .back = {}, .after = {}});
  EXPECT_NEAR(net.run(), 1.1 + 90.0 / 20, 1e-12);
}

// A flow that starts later shares the link only while both move: the first
// moves 50 bytes alone, then each gets 50 B/s until the first ends at 1.5 s; the
// second has 50 bytes left, alone at 100 B/s.
TEST(FluidNetwork, AFlowStartingLaterSharesOnlyWhileBothMove) {
  FluidNetwork net;
  const int link = net.add_link(100);
  net.add_flow({.start = 0, .bytes = 100, .latency = 0, .bound = 1e9, .penalty = 1, .factor = 1, .route = {link}, .back = {}, .after = {}});
  net.add_flow({.start = 0.4, .bytes = 100, .latency = 0.1, .bound = 1e9, .penalty = 1, .factor = 1, .route = {link}, .back = {}, .after = {}});
  EXPECT_NEAR(net.run(), 2.0, 1e-12);
  EXPECT_NEAR(net.end(0), 1.5, 1e-12);
  EXPECT_NEAR(net.end(1), 2.0, 1e-12);
}

// A flow released by others' ends: the first ends at 1 s; the second comes after
// it with a lag of 0.5 s (its peer's work), waits out its latency of 0.1 s and
// moves alone: 2.6 s. The third comes after both, without a lag.
TEST(FluidNetwork, AFlowAfterOthersStartsWhenTheyEndPlusTheirLag) {
  FluidNetwork net;
  const int link = net.add_link(100);
  const int first = net.add_flow({.bytes = 100, .bound = 1e9, .route = {link}, .back = {}, .after = {}});
  const int second = net.add_flow({.bytes = 100, .latency = 0.1, .bound = 1e9, .route = {link}, .back = {}, .after = {{first, 0.5}}});
  net.add_flow({.start = 3.0, .bytes = 50, .bound = 1e9, .route = {link}, .back = {}, .after = {{first, 0.0}, {second, 0.0}}});
  EXPECT_NEAR(net.run(), 3.5, 1e-12);
  EXPECT_NEAR(net.end(0), 1.0, 1e-12);
  EXPECT_NEAR(net.end(1), 2.6, 1e-12);
}

// Two hosts exchanging over split-duplex links: each link carries one flow and
// 5% of the other's rate as acknowledgements, so each moves at 100 / 1.05.
TEST(FluidNetwork, AcknowledgementsShareTheWayBack) {
  FluidNetwork net;
  const int a_up = net.add_link(100), a_down = net.add_link(100), b_up = net.add_link(100), b_down = net.add_link(100);
  net.add_flow({.bytes = 100, .latency = 0, .bound = 100, .penalty = 1, .factor = 1, .route = {a_up, b_down}, .back = {b_up, a_down}, .after = {}});
  net.add_flow({.bytes = 100, .latency = 0, .bound = 100, .penalty = 1, .factor = 1, .route = {b_up, a_down}, .back = {a_up, b_down}, .after = {}});
  EXPECT_NEAR(net.run(), 1.05, 1e-12);
}

// A run seen before is looked up and gives what simulating gives, to the bit; a
// run that differs in one flow's start by one ulp is simulated; a memo without
// room keeps nothing and still answers right.
TEST(FluidMemo, ARepeatedRunIsLookedUpAndAChangedOneIsNot) {
  auto fill = [](FluidNetwork& net, double second_start) {
    const int a = net.add_link(100), b = net.add_link(70);
    net.add_flow({.bytes = 100, .latency = 0.01, .bound = 90, .route = {a, b}, .back = {}, .after = {}});
    const int second = net.add_flow({.start = second_start, .bytes = 60, .bound = 1e9, .penalty = 2, .route = {b}, .back = {a}, .after = {}});
    net.add_flow({.bytes = 30, .bound = 1e9, .route = {a}, .back = {}, .after = {{second, 0.25}}});
  };
  FluidNetwork plain;
  fill(plain, 0.3);
  const double expected = plain.run();
  const std::vector<double> ends{plain.end(0), plain.end(1), plain.end(2)};
  FluidMemo memo;
  for (int repeat = 0; repeat < 3; ++repeat) {
    FluidNetwork memoized;  // its links are part of the key: a network keeps them
    fill(memoized, 0.3);
    EXPECT_EQ(memoized.run(nullptr, &memo), expected);
    for (std::size_t f = 0; f < ends.size(); ++f) EXPECT_EQ(memoized.end(f), ends[f]);
    EXPECT_EQ(memo.hits(), static_cast<std::size_t>(repeat));
  }
  const std::size_t kept = memo.bytes();
  FluidNetwork later, later_memoized;
  fill(later, std::nextafter(0.3, 1.0));
  fill(later_memoized, std::nextafter(0.3, 1.0));
  EXPECT_EQ(later_memoized.run(nullptr, &memo), later.run());
  EXPECT_EQ(memo.hits(), 2U);
  EXPECT_GT(memo.bytes(), kept);
  FluidMemo full(0);
  for (int repeat = 0; repeat < 2; ++repeat) {
    FluidNetwork memoized;
    fill(memoized, 0.3);
    EXPECT_EQ(memoized.run(nullptr, &full), expected);
  }
  EXPECT_EQ(full.hits(), 0U);
  EXPECT_EQ(full.bytes(), 0U);
}

// A ring of unequal hosts, round after round through one memo: every round after
// the first is a lookup, and each takes what a LinkLoads without a memo says.
TEST(FluidMemo, RepeatedRoundsOfARingCostWhatTheyCostUnmemoized) {
  PlatformModel listed;
  listed.listed_bandwidths =
      std::make_shared<const std::vector<double>>(std::vector<double>{1e7, 125e6, 60e6, 125e6, 90e6, 125e6});
  const Hosts hosts(listed, 6);
  std::vector<int> members(6);
  std::iota(members.begin(), members.end(), 0);
  LinkLoads plain(hosts, 6);
  plain.collective(Collective::ring, members, 1 << 20);
  const double expected = plain.take_seconds();
  FluidMemo memo;
  LinkLoads memoized(hosts, 6, nullptr, &memo);
  for (int round = 0; round < 3; ++round) {
    memoized.collective(Collective::ring, members, 1 << 20);
    EXPECT_EQ(memoized.take_seconds(), expected);
  }
  EXPECT_EQ(memo.hits(), 2U);
}

}  // namespace
}  // namespace avb
