// Option resolution: defaults, ranges, and the messages users see.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>

#include "core/error.hpp"
#include "run/averaging.hpp"

namespace avb {
namespace {

std::string error_of(const AveragingOptions& o) {
  try {
    resolve(o, 16);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Options, DefaultsResolve) {
  const AveragingOptions r = resolve(AveragingOptions{}, 16);
  EXPECT_EQ(r.protocol.name, "allreduce");
  ASSERT_TRUE(r.protocol.on_failure.has_value());
  EXPECT_EQ(*r.protocol.on_failure, FailureSemantics::abort);
  EXPECT_EQ(r.targets, (std::vector<double>{1e-4, 1e-9}));
}

// resolve() runs once per run: it stamps the peer count, and the runs refuse
// options without the stamp for their world instead of resolving again.
TEST(Options, ResolveStampsThePeerCountTheRunsRequire) {
  const AveragingOptions r = resolve(AveragingOptions{}, 16);
  EXPECT_EQ(r.resolved_for, 16);
  EXPECT_NO_THROW(require_resolved(r, 16, "run_averaging"));
  EXPECT_THROW(require_resolved(r, 8, "run_averaging"), Error);
  EXPECT_THROW(require_resolved(AveragingOptions{}, 16, "run_averaging"), Error);
  // Resolving resolved options changes nothing.
  const AveragingOptions again = resolve(r, 16);
  EXPECT_EQ(again.protocol.on_failure, r.protocol.on_failure);
  EXPECT_EQ(again.targets, r.targets);
}

TEST(Options, BadValuesNameTheFlag) {
  AveragingOptions o;
  o.fail_rate = 1.5;
  EXPECT_EQ(error_of(o).rfind("--fail-rate:", 0), 0u);
  o = {};
  o.fail_rate = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error_of(o).rfind("--fail-rate:", 0), 0u);
  o = {};
  o.dim = 0;
  EXPECT_EQ(error_of(o).rfind("--dim:", 0), 0u);
  o = {};
  o.trials = 0;
  EXPECT_EQ(error_of(o).rfind("--trials:", 0), 0u);
  o = {};
  o.rounds = -1;
  EXPECT_EQ(error_of(o).rfind("--rounds:", 0), 0u);
  o = {};
  o.targets = {1e-3, -1};
  EXPECT_EQ(error_of(o).rfind("--target:", 0), 0u);
  o = {};
  o.protocol.name = "nope";
  EXPECT_EQ(error_of(o), "--protocol: 'nope' is not one of {" + protocol_names() + "}");
  o = {};
  o.protocol.on_failure = FailureSemantics::partial;
  EXPECT_EQ(error_of(o), "--on-failure: 'partial' is not supported by --protocol allreduce (accepted: abort, survivors)");
}

// Every setting's range is checked from its one declaration (for_each_setting),
// with the flag's name and what it accepts.
TEST(Options, SettingsOutsideTheirDeclaredRangeAreRefused) {
  const std::vector<std::pair<std::function<void(ProtocolOptions&)>, std::string>> cases = {
      {[](ProtocolOptions& p) { p.choco.gamma = 0; }, "--gamma: 0 is not a number in (0, 1]"},
      {[](ProtocolOptions& p) { p.choco.gamma = std::numeric_limits<double>::infinity(); },
       "--gamma: inf is not a number in (0, 1]"},
      {[](ProtocolOptions& p) { p.random_groups.group_size = 1; }, "--group-size: 1 is not an integer >= 2"},
      {[](ProtocolOptions& p) { p.wait.quorum = 1.5; }, "--quorum: 1.5 is not a number in (0, 1]"},
      {[](ProtocolOptions& p) { p.wait.deadline_floor = -1; },
       "--deadline-floor: -1 is not a number >= 0 (seconds)"},
      {[](ProtocolOptions& p) { p.quantizer.lattice_q = 1; }, "--lattice-q: 1 is not an integer in [2, 4294967295]"},
      {[](ProtocolOptions& p) { p.quantizer.lattice_eps = 0; }, "--lattice-eps: 0 is not a number > 0"},
  };
  for (const auto& [set, message] : cases) {
    AveragingOptions o;
    set(o.protocol);
    EXPECT_EQ(error_of(o), message);
  }
}

// A family of shared settings is taken whole, so that a new setting in its table
// reaches every protocol that takes the family: a row holds all of a family's
// flags or none (the lattice's own are a family of their own, which the
// all-reduces leave out), and some row takes each family.
TEST(Options, CatalogRowsTakeAFamilyOfSettingsWhole) {
  SettingFlagNames quantizer, lattice, wait;
  QuantizerSpec q;
  WaitSpec w;
  for_each_setting(q, quantizer);
  for_each_lattice_setting(q, lattice);
  for_each_setting(w, wait);
  std::erase_if(quantizer.flags, [&](std::string_view f) {
    return std::find(lattice.flags.begin(), lattice.flags.end(), f) != lattice.flags.end();
  });
  for (const auto& [family, flags] : {std::pair{"quantizer", quantizer.flags}, std::pair{"lattice", lattice.flags},
                                      std::pair{"waiting", wait.flags}}) {
    ASSERT_FALSE(flags.empty()) << family;
    int takers = 0;
    for (const ProtocolInfo& row : protocol_catalog()) {
      const auto held = std::count_if(flags.begin(), flags.end(), [&](std::string_view f) {
        return std::find(row.flags.begin(), row.flags.end(), f) != row.flags.end();
      });
      EXPECT_TRUE(held == 0 || held == static_cast<long>(flags.size()))
          << row.name << " takes " << held << " of the " << flags.size() << " flags of the " << family << " family";
      takers += held > 0;
    }
    EXPECT_GT(takers, 0) << "no protocol takes the " << family << " family";
  }
}

// A shared setting outside any family names its takers in its declaration
// (protocols/options.hpp): each must be a built-in protocol (a misspelt name
// would drop the flag silently), whose row takes the flag, and no other row does.
struct TakersOf {
  std::vector<std::pair<std::string_view, Takers>> shared;
  template <class... Rest>
  void word(std::string_view flag, Rest&&... rest) { note(flag, std::forward_as_tuple(rest...)); }
  template <class... Rest>
  void integer(std::string_view flag, Rest&&... rest) { note(flag, std::forward_as_tuple(rest...)); }
  template <class... Rest>
  void real(std::string_view flag, Rest&&... rest) { note(flag, std::forward_as_tuple(rest...)); }
  template <class... Rest>
  void custom(std::string_view flag, Rest&&... rest) { note(flag, std::forward_as_tuple(rest...)); }
  // (field, accepts, help, recorded[, takers])
  template <class Arguments>
  void note(std::string_view flag, const Arguments& a) {
    if constexpr (std::tuple_size_v<Arguments> == 5) shared.emplace_back(flag, Takers(std::get<4>(a)));
  }
};

TEST(Options, ASharedSettingReachesTheRowsOfItsTakersOnly) {
  TakersOf visitor;
  const ProtocolOptions o;
  for_each_setting(o, visitor);
  ASSERT_GE(visitor.shared.size(), 6u);  // --min-group-size ... --alive-weights
  for (const auto& [flag, takers] : visitor.shared) {
    ASSERT_FALSE(takers.empty()) << flag;
    for (std::string_view name : takers)
      EXPECT_TRUE(std::any_of(protocol_catalog().begin(), protocol_catalog().end(),
                              [&](const ProtocolInfo& row) { return row.name == name; }))
          << flag << " names " << name << ", which is no protocol";
    for (const ProtocolInfo& row : protocol_catalog())
      EXPECT_EQ(takes(row.name, flag), std::find(takers.begin(), takers.end(), row.name) != takers.end())
          << row.name << ", " << flag;
  }
}

// describe() records the protocol's own settings in its catalog row's order, and
// a setting only where it applies (the lattice's q and eps under lattice).
TEST(Options, DescribeRecordsTheSettingsThatApply) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  ProtocolOptions o;
  o.name = "swarm";
  o.quantizer = parse_quantizer("stochastic:3");
  o.swarm.mode = SwarmMode::non_blocking;
  const Pairs plain = describe(o);
  EXPECT_EQ(plain.front(), (std::pair<std::string, std::string>{"protocol", "swarm"}));
  EXPECT_EQ(plain[1], (std::pair<std::string, std::string>{"on-failure", "default"}));
  auto has = [](const Pairs& pairs, const std::string& key) {
    return std::any_of(pairs.begin(), pairs.end(), [&](const auto& kv) { return kv.first == key; });
  };
  EXPECT_TRUE(has(plain, "mode"));
  EXPECT_TRUE(has(plain, "quantizer"));
  EXPECT_FALSE(has(plain, "lattice-q"));
  EXPECT_FALSE(has(plain, "group-size"));  // not swarm's
  o.quantizer = parse_quantizer("lattice", 256, 0.0035);
  const Pairs lattice = describe(o);
  auto at = std::find_if(lattice.begin(), lattice.end(), [](const auto& kv) { return kv.first == "quantizer"; });
  ASSERT_LE(at + 3, lattice.end());
  EXPECT_EQ((Pairs{at, at + 3}), (Pairs{{"quantizer", "lattice"}, {"lattice-q", "256"}, {"lattice-eps", "0.0035"}}));
}

TEST(Options, TargetsSortedDescendingWithoutDuplicates) {
  AveragingOptions o;
  o.targets = {1e-9, 1e-4, 1e-9, 1e-2};
  EXPECT_EQ(resolve(o, 16).targets, (std::vector<double>{1e-2, 1e-4, 1e-9}));
}

TEST(Options, RoundsToTargetUsesCapWhenNeverReached) {
  std::vector<RoundRow> rows(4);
  for (int i = 0; i < 4; ++i) {
    rows[i].round = i;
    rows[i].variance = std::vector<double>{1, 1e-3, 1e-6, 1e-9}[i];
  }
  EXPECT_EQ(rounds_to_target(rows, 1e-4).rounds, 2);
  EXPECT_TRUE(rounds_to_target(rows, 1e-4).reached);
  EXPECT_EQ(rounds_to_target(rows, 1e-9).rounds, 3);  // strictly below: 1e-9 is not < 1e-9
  EXPECT_FALSE(rounds_to_target(rows, 1e-9).reached);
  EXPECT_EQ(rounds_to_target(rows, 2.0).rounds, 0);
}

TEST(Options, TrialSeedsAndInitialValuesAreKeyed) {
  EXPECT_EQ(trial_seed(10, 3), trial_seed(10, 3));
  // Neighbouring run seeds share no trial seed (they would if trial k used seed + k).
  for (int a = 0; a < 20; ++a)
    for (int b = 0; b < 20; ++b) EXPECT_NE(trial_seed(10, a), trial_seed(11, b));
  EXPECT_EQ(initial_value(5, 3, 2), initial_value(5, 3, 2));
  EXPECT_NE(initial_value(5, 3, 2), initial_value(5, 4, 2));
  EXPECT_NE(initial_value(5, 3, 2), initial_value(6, 3, 2));
}

}  // namespace
}  // namespace avb
