// The failure model: rates, permanence, purity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "protocols/protocol.hpp"
#include "run/options.hpp"
#include "sim/arrivals.hpp"
#include "sim/failures.hpp"
#include "sim/stragglers.hpp"

namespace avb {
namespace {

// The settings' ranges, as their declarations check them (protocols/options.hpp,
// run/options.hpp).
void validate(const WaitSpec& w) {
  ProtocolOptions o;
  o.wait = w;
  for_each_setting(o, RangeCheck{});
}
void validate(const StragglerSpec& spec) {
  RunOptions o;
  o.stragglers = spec;
  for_each_failure_setting(o, RangeCheck{});
}

// Churn: an up slot fails with probability p per round and a down slot is taken by
// a new peer with probability q per round (so a join is: up in t, down in t - 1);
// donors are up in t - 1 and t and never join themselves. Rates are estimated per
// exposure (rounds whose predecessor was up, resp. down), which spells cut off at
// the horizon do not bias: 2000 peers x 400 rounds, within 5 standard errors (false
// alarm about 6e-7 each).
TEST(Churn, SpellsAreGeometricAndJoinsLoadFromLivePeers) {
  const double p = 0.05, q = 0.2;
  const int n = 2000, rounds = 400;
  const FailureModel f(21, p, FailureKind::churn, n, q);
  double up_rounds = 0, down_rounds = 0, failures = 0, rejoins = 0;
  int joins = 0;
  for (int peer = 0; peer < n; ++peer) {
    for (int t = 1; t <= rounds; ++t) {
      const bool before = f.alive(t - 1, peer), now = f.alive(t, peer);
      ASSERT_EQ(f.joined(t, peer), now && !before) << "peer " << peer << " round " << t;
      if (before) {
        ++up_rounds;
        failures += !now;
      } else {
        ++down_rounds;
        rejoins += now;
      }
      if (f.joined(t, peer) && peer % 50 == 0) {
        const int d = f.donor(t, peer);
        ASSERT_GE(d, 0);
        EXPECT_TRUE(f.alive(t - 1, d) && f.alive(t, d) && !f.joined(t, d));
        ++joins;
      }
    }
  }
  EXPECT_NEAR(failures / up_rounds, p, 5 * std::sqrt(p * (1 - p) / up_rounds));
  EXPECT_NEAR(rejoins / down_rounds, q, 5 * std::sqrt(q * (1 - q) / down_rounds));
  EXPECT_GT(joins, 100);
  // donors(t), the O(N) form the engines use, names the same donor per peer.
  for (int t = 1; t <= 60; ++t) {
    const std::vector<int> all = f.donors(t);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    for (int peer = 0; peer < n; peer += 7) ASSERT_EQ(all[peer], f.donor(t, peer)) << "peer " << peer << " round " << t;
  }
  EXPECT_TRUE(FailureModel(21, p, FailureKind::transient, n).donors(3).empty());
  // Without a join rate churn is permanent failure: nobody ever comes back.
  const FailureModel gone(21, p, FailureKind::churn, 50, 0.0);
  for (int peer = 0; peer < 50; ++peer)
    for (int t = 2; t <= 200; ++t) EXPECT_FALSE(gone.joined(t, peer));
  EXPECT_THROW(check_churn(FailureKind::transient, 0.5), ConfigError);
  EXPECT_NO_THROW(check_churn(FailureKind::churn, 0.5));
  // Which protocols run under churn is the catalog's.
  EXPECT_THROW(check_failure_support("pushsum", FailureKind::churn, false), ConfigError);
  EXPECT_THROW(check_failure_support("swarm", FailureKind::churn, true), ConfigError);
  EXPECT_NO_THROW(check_failure_support("swarm", FailureKind::churn, false));
  EXPECT_NO_THROW(check_failure_support("pushsum", FailureKind::transient, true));
}

// Stragglers: the keyed fraction of 20 000 peers is within 5 standard errors
// (false alarm about 6e-7) of the rate, the factor is the slowdown or 1, the same
// peer gets the same answer, and another trial seed picks other peers.
TEST(Stragglers, FractionAndFactorsAreKeyed) {
  const StragglerSpec spec{0.1, 3.0};
  const Stragglers a(11, spec), b(12, spec);
  const int n = 20000;
  int slow = 0, same = 0;
  for (int p = 0; p < n; ++p) {
    const double f = a.factor(p);
    ASSERT_TRUE(f == 1.0 || f == 3.0);
    slow += f == 3.0;
    same += f == b.factor(p);
    ASSERT_EQ(f, a.factor(p));
  }
  EXPECT_NEAR(static_cast<double>(slow) / n, 0.1, 5 * std::sqrt(0.1 * 0.9 / n));
  EXPECT_LT(same, n);  // the seeds disagree somewhere (expected agreement 0.82)
  EXPECT_EQ(Stragglers(11, StragglerSpec{}).factor(7), 1.0);
  EXPECT_THROW(validate(StragglerSpec{1.5, 2.0}), ConfigError);
  EXPECT_THROW(validate(StragglerSpec{0.5, 0.5}), ConfigError);
}

TEST(Failures, RoundZeroEveryoneAlive) {
  const FailureModel m(1, 1.0, FailureKind::transient, 10);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(m.alive(0, i));
  EXPECT_FALSE(m.alive(1, 0));
}

TEST(Failures, ZeroRateNeverFails) {
  const FailureModel m(1, 0.0, FailureKind::permanent, 100);
  EXPECT_EQ(m.count_alive(1000000), 100);
}

TEST(Failures, TransientRateMatchesP) {
  const double p = 0.01;
  const FailureModel m(99, p, FailureKind::transient, 1000);
  const int rounds = 200, peers = 1000;
  int down = 0;
  for (int t = 1; t <= rounds; ++t) down += peers - m.count_alive(t);
  const double trials = static_cast<double>(rounds) * peers;
  // Binomial(200000, 0.01): sd = 44.5; 5 sigma.
  EXPECT_NEAR(down, p * trials, 5 * std::sqrt(trials * p * (1 - p)));
}

TEST(Failures, TransientIsIndependentAcrossRounds) {
  // A peer down in round t is down in t+1 with probability p, not more.
  const double p = 0.2;
  const FailureModel m(5, p, FailureKind::transient, 20000);
  int both = 0, first = 0;
  for (int i = 0; i < 20000; ++i) {
    if (!m.alive(1, i)) {
      ++first;
      both += m.alive(2, i) ? 0 : 1;
    }
  }
  EXPECT_NEAR(static_cast<double>(both) / first, p, 5 * std::sqrt(p * (1 - p) / first));
}

TEST(Failures, PermanentStaysDownAndSurvivalIsGeometric) {
  const double p = 0.05;
  const FailureModel m(11, p, FailureKind::permanent, 20000);
  const int peers = 20000;
  for (int i = 0; i < 200; ++i) {
    bool was_down = false;
    for (int t = 1; t < 80; ++t) {
      const bool down = !m.alive(t, i);
      ASSERT_TRUE(!was_down || down) << "peer " << i << " came back in round " << t;
      was_down = down;
    }
  }
  for (int t : {1, 10, 40}) {
    const double expected = std::pow(1 - p, t);
    const double frac = static_cast<double>(m.count_alive(t)) / peers;
    EXPECT_NEAR(frac, expected, 5 * std::sqrt(expected * (1 - expected) / peers)) << "round " << t;
  }
}

TEST(Failures, AlivePeersAgreesWithAlive) {
  for (auto kind : {FailureKind::transient, FailureKind::permanent}) {
    const FailureModel m(8, 0.3, kind, 37);  // 37: the last Philox block is partly used
    for (int t = 0; t < 6; ++t) {
      std::vector<int> expected;
      for (int i = 0; i < 37; ++i)
        if (m.alive(t, i)) expected.push_back(i);
      EXPECT_EQ(m.alive_peers(t), expected) << "round " << t;
      EXPECT_EQ(m.count_alive(t), static_cast<int>(expected.size()));
    }
  }
}

TEST(Failures, RateOneMeansEveryoneDownAfterRoundZero) {
  for (auto kind : {FailureKind::transient, FailureKind::permanent}) {
    const FailureModel m(8, 1.0, kind, 20);
    EXPECT_EQ(m.count_alive(0), 20);
    EXPECT_EQ(m.count_alive(1), 0);
    EXPECT_EQ(m.count_alive(50), 0);
  }
}

TEST(Failures, PureFunctionOfSeedRoundPeer) {
  const FailureModel a(3, 0.3, FailureKind::transient, 50), b(3, 0.3, FailureKind::transient, 50);
  for (int t = 1; t < 20; ++t)
    for (int i = 0; i < 50; ++i) ASSERT_EQ(a.alive(t, i), b.alive(t, i));
  // Asking in any order changes nothing.
  EXPECT_EQ(a.alive(7, 3), b.alive(7, 3));
  EXPECT_EQ(a.alive_peers(4), b.alive_peers(4));
}

TEST(Failures, ParseNamesAndRejectOthers) {
  EXPECT_EQ(parse_failure_kind("permanent"), FailureKind::permanent);
  EXPECT_EQ(parse_failure_semantics("partial"), FailureSemantics::partial);
  EXPECT_THROW(parse_failure_kind("sometimes"), ConfigError);
  try {
    parse_failure_semantics("retry");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--on-failure: 'retry' is not one of {survivors, abort, partial}");
  }
  EXPECT_THROW(FailureModel(1, 1.5, FailureKind::transient, 4), ConfigError);
  EXPECT_THROW(FailureModel(1, -0.1, FailureKind::transient, 4), ConfigError);
}

// An availability trace written from a keyed churn trial's schedule is that
// trial: every peer's state, every join and every donor, round by round (the
// donors are drawn from the seed in both).
TEST(Availability, TraceOfAChurnScheduleIsThatChurn) {
  const int n = 300, rounds = 120;
  const FailureModel churn(77, 0.04, FailureKind::churn, n, 0.15);
  std::ostringstream csv;
  csv << "# written by the test\npeer,down,up\n";
  for (int peer = n - 1; peer >= 0; --peer)  // any line order
    for (int t = 1; t <= rounds; ++t)
      if (!churn.alive(t, peer) && churn.alive(t - 1, peer)) {
        int up = t;
        while (up <= rounds && !churn.alive(up, peer)) ++up;
        csv << peer << ',' << t << ',';
        if (up <= rounds) csv << up;
        csv << '\n';
      }
  std::istringstream in(csv.str());
  auto trace = std::make_shared<const Availability>(Availability::parse(in, "churn.csv"));
  const FailureModel replay(77, 0.0, FailureKind::trace, n, 0.0, trace);
  int joins = 0;
  for (int t = 0; t <= rounds; ++t) {
    ASSERT_EQ(replay.alive_peers(t), churn.alive_peers(t)) << "round " << t;
    ASSERT_EQ(replay.donors(t), churn.donors(t)) << "round " << t;
    for (int peer = 0; peer < n; ++peer) joins += replay.joined(t, peer);
  }
  EXPECT_GT(joins, 100);  // the schedule is not trivial
}

// Each malformed trace is one ConfigError naming --availability, the file and line.
TEST(Availability, MalformedTracesAreRefusedNamingTheLine) {
  const auto refusal = [](const std::string& text) -> std::string {
    std::istringstream in(text);
    try {
      (void)Availability::parse(in, "t.csv");
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(refusal("peer,down,up\n0,3,5\n0,9,\n2,1,2\n"), "accepted");
  EXPECT_EQ(refusal("peer,up,down\n"), "--availability: t.csv:1: the first line must be the header 'peer,down,up'");
  EXPECT_EQ(refusal(""), "--availability: t.csv: no header line 'peer,down,up'");
  EXPECT_EQ(refusal("peer,down,up\n0,0,3\n"), "--availability: t.csv:2: down '0' is not an integer in [1, 2147483647]");
  EXPECT_EQ(refusal("peer,down,up\n-1,2,3\n"), "--availability: t.csv:2: peer '-1' is not an integer in [0, 2147483646]");
  EXPECT_EQ(refusal("peer,down,up\n0,4,4\n"),
            "--availability: t.csv:2: up 4 is not after down 4 (the peer is down in rounds down..up-1)");
  EXPECT_EQ(refusal("peer,down,up\n0,4,x\n"), "--availability: t.csv:2: up 'x' is not an integer in [2, 2147483647]");
  EXPECT_EQ(refusal("peer,down,up\n0,4\n"), "--availability: t.csv:2: expected three fields, peer,down,up");
  EXPECT_EQ(refusal("peer,down,up\n1,5,9\n1,8,12\n"),
            "--availability: t.csv:3: peer 1 is down from round 8, which overlaps or touches its spell on line 2 "
            "(a peer that joins is up for at least its round)");
  EXPECT_EQ(refusal("peer,down,up\n1,9,12\n1,5,9\n"),
            "--availability: t.csv:2: peer 1 is down from round 9, which overlaps or touches its spell on line 3 "
            "(a peer that joins is up for at least its round)");
  EXPECT_EQ(refusal("peer,down,up\n1,5,\n1,50,60\n"),
            "--availability: t.csv:3: peer 1 is down from round 50, which overlaps or touches its spell on line 2 "
            "(a peer that joins is up for at least its round)");
  std::istringstream wide("peer,down,up\n9,2,3\n");
  auto trace = std::make_shared<const Availability>(Availability::parse(wide, "t.csv"));
  EXPECT_THROW(FailureModel(1, 0.0, FailureKind::trace, 9, 0.0, trace), ConfigError);
  EXPECT_THROW(FailureModel(1, 0.0, FailureKind::trace, 9), ConfigError);
  EXPECT_NO_THROW(FailureModel(1, 0.0, FailureKind::trace, 10, 0.0, trace));
}


// Waiting policies (sim/arrivals.hpp). Host i computes at 1/(i+1) flops/s, so
// peer i's work of `flops` arrives at flops (i+1) seconds, in every round.
Arrivals staircase(WaitSpec wait, double flops = 2.0) {
  return Arrivals(5, StragglerSpec{}, flops, wait, [](int i) { return 1.0 / (i + 1); });
}
std::vector<int> late_members(const Arrivals& a, int t, std::vector<int> members) {
  std::vector<std::uint8_t> late;
  a.cut(t, members, late);
  std::vector<int> out;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (late[i]) out.push_back(members[i]);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Arrivals, QuorumWaitsForTheCeilingOfQTimesTheMembers) {
  const std::vector<int> group{3, 1, 0, 2};  // arrivals 8, 4, 2, 6 s
  WaitSpec w{WaitPolicy::quorum, 0.75};
  std::vector<std::uint8_t> late;
  const Arrivals::Cut cut = staircase(w).cut(1, group, late);
  EXPECT_DOUBLE_EQ(cut.proceed, 6.0);  // the third arrival
  EXPECT_EQ(cut.late, 1);
  EXPECT_EQ(late_members(staircase(w), 1, group), std::vector<int>{3});
  w.quorum = 0.5;
  EXPECT_EQ(late_members(staircase(w), 1, group), (std::vector<int>{2, 3}));
  w.quorum = 0.01;  // at least one member
  EXPECT_EQ(late_members(staircase(w), 1, group), (std::vector<int>{1, 2, 3}));
  w.quorum = 1.0;
  EXPECT_TRUE(late_members(staircase(w), 1, group).empty());
  EXPECT_TRUE(late_members(staircase(WaitSpec{}), 1, group).empty());  // all
  EXPECT_DOUBLE_EQ(staircase(WaitSpec{}).cut(1, group, late).proceed, 8.0);
}

TEST(Arrivals, TiedArrivalsAreNeverLate) {
  const Arrivals equal(5, StragglerSpec{}, 1e6, WaitSpec{WaitPolicy::quorum, 0.25}, [](int) { return 1e9; });
  std::vector<std::uint8_t> late;
  EXPECT_EQ(equal.cut(3, std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, late).late, 0);
}

TEST(Arrivals, DeadlineIsMedianPlusKMadsOfRecentArrivals) {
  // Arrivals 2, 4, 6 and 20 s (peer 9) in every round: history median 6 (the upper
  // middle of 2, 4, 6, 20 repeated), deviations 4, 2, 0, 14 with MAD 4 (again the
  // upper middle), so the deadline is 6 + 4k.
  const std::vector<int> group{0, 1, 2, 9};
  WaitSpec w{WaitPolicy::deadline};
  w.deadline_k = 1;
  std::vector<std::uint8_t> late;
  for (int t : {1, 2, kDeadlineHistory + 3}) {
    const Arrivals::Cut cut = staircase(w).cut(t, group, late);
    EXPECT_DOUBLE_EQ(cut.proceed, 10.0) << t;
    EXPECT_EQ(late_members(staircase(w), t, group), std::vector<int>{9}) << t;
  }
  w.deadline_k = 0.5;  // 8 s: still only peer 9
  EXPECT_EQ(late_members(staircase(w), 3, group), std::vector<int>{9});
  w.deadline_k = 0;  // 6 s: peer 2 arrives on the dot and is on time
  EXPECT_EQ(late_members(staircase(w), 3, group), std::vector<int>{9});
  w.deadline_floor = 30;  // the floor is past everyone: nobody is late, the group goes on with the last
  EXPECT_TRUE(late_members(staircase(w), 3, group).empty());
  EXPECT_DOUBLE_EQ(staircase(w).cut(3, group, late).proceed, 20.0);
}

TEST(Arrivals, LognormalWorkIsKeyedByRoundAndPeer) {
  StragglerSpec spec;
  spec.sigma = 0.5;
  const Arrivals a(11, spec, 1.0, WaitSpec{}, [](int) { return 1.0; });
  const Arrivals b(11, spec, 1.0, WaitSpec{}, [](int) { return 1.0; });
  EXPECT_EQ(a.work_factor(3, 7), b.work_factor(3, 7));
  EXPECT_NE(a.work_factor(3, 7), a.work_factor(4, 7));
  EXPECT_NE(a.work_factor(3, 7), a.work_factor(3, 8));
  // log factor ~ N(0, sigma^2): mean and standard deviation over 20 000 draws
  // within 5 standard errors.
  double sum = 0, squares = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double l = std::log(a.work_factor(1 + i % 100, i / 100));
    sum += l;
    squares += l * l;
  }
  const double mean = sum / n, sd = std::sqrt(squares / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 5 * 0.5 / std::sqrt(n));
  EXPECT_NEAR(sd, 0.5, 5 * 0.5 / std::sqrt(2.0 * n));
  EXPECT_LE(a.work_factor(1, 1), max_work_jitter(0.5));
  // A straggler's factor multiplies in.
  spec.fraction = 1;
  const Arrivals c(11, spec, 1.0, WaitSpec{}, [](int) { return 1.0; });
  EXPECT_DOUBLE_EQ(c.work_factor(3, 7), spec.slowdown * a.work_factor(3, 7));
}


TEST(Arrivals, RefusesSettingsOutsideTheirRanges) {
  auto refused = [](WaitSpec w, const std::string& flag) {
    try {
      validate(w);
    } catch (const ConfigError& e) {
      return std::string(e.what()).rfind(flag + ":", 0) == 0;
    }
    return false;
  };
  for (double q : {0.0, -0.5, 1.5, std::nan("")}) EXPECT_TRUE(refused(WaitSpec{WaitPolicy::quorum, q}, "--quorum")) << q;
  WaitSpec k;
  k.deadline_k = -1;
  EXPECT_TRUE(refused(k, "--deadline-k"));
  WaitSpec floor;
  floor.deadline_floor = INFINITY;
  EXPECT_TRUE(refused(floor, "--deadline-floor"));
  EXPECT_NO_THROW(validate(WaitSpec{WaitPolicy::quorum, 1.0}));
  StragglerSpec s;
  s.sigma = -0.1;
  EXPECT_THROW(validate(s), ConfigError);
}

}  // namespace
}  // namespace avb
