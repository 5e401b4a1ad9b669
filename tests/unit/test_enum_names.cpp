// The name table of every enum a flag sets (core/enum_names.hpp): each value's name
// parses back to it, to_string agrees with the table, and the error text for an
// unknown name starts with the flag and lists every accepted name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/enum_names.hpp"
#include "core/error.hpp"
#include "core/suggest.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "collectives/group_allreduce.hpp"
#include "protocols/protocol.hpp"
#include "sgd/objective.hpp"
#include "sgd/trainer.hpp"
#include "sim/failures.hpp"
#include "sim/topology.hpp"

namespace avb {
namespace {

// `parse` and `to_string`: the library's own functions for the enum, which must
// be the table's.
template <class E, std::size_t N, class Parse>
void check_table(const EnumNames<E, N>& table, Parse parse, const std::string& flag) {
  EXPECT_EQ(table.flag, flag);
  for (const auto& entry : table.entries) {
    EXPECT_EQ(parse(entry.name), entry.value) << entry.name;
    EXPECT_EQ(to_string(entry.value), entry.name);
    EXPECT_EQ(table.parse(table.name(entry.value)), entry.value);
  }
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j) EXPECT_NE(table.entries[i].name, table.entries[j].name);
  for (const std::string& bad : std::vector<std::string>{"", "NOPE", " " + std::string(table.entries[0].name)}) {
    try {
      parse(bad);
      ADD_FAILURE() << flag << " accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      // A name with a stray space is one edit from the real one: it is suggested.
      const std::string suggestion =
          bad.empty() || bad[0] != ' ' ? "" : " (did you mean '" + std::string(table.entries[0].name) + "'?)";
      EXPECT_EQ(what, flag + ": '" + bad + "' is not one of {" + table.list() + "}" + suggestion);
      for (const auto& entry : table.entries) EXPECT_NE(what.find(entry.name), std::string::npos) << what;
    }
  }
}

TEST(EnumNames, EveryTableRoundTripsAndListsEveryName) {
  check_table(kFailureKindNames, parse_failure_kind, "--failure");
  check_table(kFailureSemanticsNames, parse_failure_semantics, "--on-failure");
  check_table(kWeightsNames, parse_weights, "--weights");
  check_table(kPlacementNames, parse_placement, "--placement");
  check_table(kKeyUpdateNames, parse_key_update, "--key-update");
  check_table(kCollectiveNames, parse_collective, "--collective");
  check_table(kSwarmModeNames, parse_swarm_mode, "--mode");
  check_table(kSwarmClockNames, parse_swarm_clock, "--clock");
  check_table(kAliveWeightsNames, parse_alive_weights, "--alive-weights");
  check_table(kLrScheduleNames, parse_lr_schedule, "--lr-schedule");
  check_table(kLocalStepsDistNames, parse_local_steps_dist, "--local-steps-dist");
  check_table(kObjectiveKindNames, parse_objective_kind, "--objective");
  check_table(kQuadraticPresetNames, parse_quadratic_preset, "--preset");
  check_table(kDataSplitNames, parse_data_split, "--split");
}

// The wording users have always seen, kept by the tables.
TEST(EnumNames, ErrorTextIsTheOneUsersKnow) {
  try {
    parse_collective("x");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "--collective: 'x' is not one of {auto, ring, doubling, tree, butterfly, mpi}");
  }
  EXPECT_EQ(kDataSplitNames.list(","), "random,label-sorted,dirichlet");
  EXPECT_EQ(kCollectiveNames.name(static_cast<Collective>(99)), "?");
}

// The typo distance counts a swap of neighbours as one edit, and a suggestion
// comes only within a typo's reach of the name typed.
TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("moshpit", "moshpit"), 0u);
  EXPECT_EQ(edit_distance("mosphit", "moshpit"), 1u);  // one swap
  EXPECT_EQ(edit_distance("rng", "ring"), 1u);
  EXPECT_EQ(edit_distance("", "exp"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // no swap and insert at once (optimal string alignment)
}

TEST(Suggest, DidYouMean) {
  const std::vector<std::string> protocols{"allreduce", "random-groups", "moshpit", "gossip", "pushsum"};
  EXPECT_EQ(did_you_mean("mosphit", protocols), " (did you mean 'moshpit'?)");
  EXPECT_EQ(did_you_mean("gosip", protocols), " (did you mean 'gossip'?)");
  EXPECT_EQ(did_you_mean("allreduce", protocols), "");  // accepted as typed: nothing to suggest
  EXPECT_EQ(did_you_mean("sgd", protocols), "");        // nothing near
  EXPECT_EQ(did_you_mean("--protocl", std::vector<std::string>{"--protocol", "--rounds"}),
            " (did you mean '--protocol'?)");
  EXPECT_EQ(did_you_mean("abc", std::vector<std::string>{"abd", "abe"}), " (did you mean 'abd'?)");  // ties: the first
}

}  // namespace
}  // namespace avb
