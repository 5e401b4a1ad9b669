// Group all-reduces (ring, recursive doubling) against the exact sum, for many
// lengths on the job's size, and their traffic against the formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "core/comm.hpp"
#include "core/rng.hpp"
#include "collectives/group_allreduce.hpp"
#include "run/stats.hpp"

namespace avb {
namespace {

// Every rank can regenerate every rank's input from the keyed stream, so each
// computes the reference itself, in long double.
double input(int rank, std::size_t k) {
  return Stream(42, StreamId::test).normal(1, static_cast<std::uint64_t>(rank), k) * (1 + rank % 3);
}

using Param = std::tuple<Collective, std::size_t>;
class GroupAllreduceTest : public ::testing::TestWithParam<Param> {};

TEST_P(GroupAllreduceTest, SumAndMeanMatchExactReference) {
  const auto [collective, length] = GetParam();
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<double> x(length), y(length);
  for (std::size_t k = 0; k < length; ++k) x[k] = y[k] = input(comm.rank(), k);
  if (collective == Collective::tree) {
    // The tree has no separate sum: scale its mean back (exact for n a power of 2,
    // within rounding otherwise, which the tolerance below allows).
    GroupAllreduce(Collective::tree).average(comm, x);
    for (double& v : x) v *= n;
  } else if (collective == Collective::ring) {
    RingAllreduce ring;
    ring.sum(comm, x);
  } else {
    DoublingAllreduce doubling;
    doubling.sum(comm, x);
  }
  GroupAllreduce(collective).average(comm, y);
  // Count mismatches rather than ASSERT in the loop: a rank that left the test
  // early would leave the others waiting in the Bcast below.
  // Each rank checks every n-th coordinate against the reference (the check below
  // that all ranks hold the same bits covers the rest): O(n L) work in all, not
  // O(n^2 L), which matters for 64 simulated ranks in one process.
  int bad = 0;
  for (std::size_t k = static_cast<std::size_t>(comm.rank()); k < length; k += static_cast<std::size_t>(n)) {
    long double exact = 0, magnitude = 0;
    for (int r = 0; r < n; ++r) {
      exact += input(r, k);
      magnitude += std::fabs(input(r, k));
    }
    if (!(std::fabs(x[k] - static_cast<double>(exact)) <= 1e-12 * static_cast<double>(magnitude)) ||
        !(std::fabs(y[k] - static_cast<double>(exact / n)) <= 1e-12 * static_cast<double>(magnitude / n)))
      if (bad++ < 3) ADD_FAILURE() << "k=" << k << " sum " << x[k] << " mean " << y[k] << " exact " << static_cast<double>(exact);
  }
  EXPECT_EQ(bad, 0);
  // Every rank must hold the very same bits.
  std::vector<double> root(y);
  MPI_Bcast(root.data(), static_cast<int>(length), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int differ = 0;
  for (std::size_t k = 0; k < length; ++k) differ += root[k] != y[k] ? 1 : 0;
  EXPECT_EQ(differ, 0);
}

TEST_P(GroupAllreduceTest, TrafficMatchesTheAlgorithm) {
  const auto [collective, length] = GetParam();
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<double> x(length, 1.0);
  GroupAllreduce(collective).average(comm, x);
  std::uint64_t mine = comm.traffic().bytes_sent, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, collective_bytes(collective, n, length));
  if (collective == Collective::ring) {
    // Each chunk crosses n-1 links in each phase: 2(n-1) L doubles, 2(n-1) messages per rank.
    EXPECT_EQ(total, 2ull * static_cast<std::uint64_t>(n - 1) * length * sizeof(double));
    EXPECT_EQ(comm.traffic().messages_sent, 2u * static_cast<std::uint64_t>(n - 1));
  } else if (collective == Collective::tree) {
    std::uint64_t messages = comm.traffic().messages_sent, all = 0;
    MPI_Allreduce(&messages, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    EXPECT_EQ(all, 2u * static_cast<std::uint64_t>(n - 1));
  } else if (collective == Collective::mpi) {
    // Charged as the ring: its messages are the library's own, not observable.
    EXPECT_EQ(comm.traffic().messages_sent, n > 1 ? 2u * static_cast<std::uint64_t>(n - 1) : 0u);
  } else if (collective == Collective::doubling && n > 1 && (n & (n - 1)) == 0) {
    EXPECT_EQ(comm.traffic().messages_sent, static_cast<std::uint64_t>(std::log2(n)));
  }
  int off = 0;
  for (double v : x) off += v != 1.0 ? 1 : 0;
  EXPECT_EQ(off, 0);
}

INSTANTIATE_TEST_SUITE_P(Lengths, GroupAllreduceTest,
                         ::testing::Combine(::testing::Values(Collective::ring, Collective::doubling, Collective::tree,
                                                              Collective::butterfly, Collective::mpi),
                                            ::testing::Values(0, 1, 2, 3, 5, 7, 8, 9, 64, 1000, 100003)));

TEST(GroupAllreduce, AutomaticChoosesDoublingForShortAndRingForLongVectors) {
  EXPECT_EQ(choose_collective(1024, 1), Collective::doubling);
  EXPECT_EQ(choose_collective(1024, 1 << 20), Collective::ring);
  EXPECT_EQ(choose_collective(2, 1 << 20), Collective::doubling);  // one exchange either way
  EXPECT_EQ(choose_collective(8, 1 << 20), Collective::ring);
}

TEST(GroupAllreduce, WorksOnSubgroups) {
  Comm world = Comm::duplicate(MPI_COMM_WORLD);
  // Odd ranks form one group, even ranks another, members listed in descending
  // order so group rank and world rank differ. The two groups run at once on the
  // one communicator with the same tags, then regroup into lower and upper halves
  // (subgroup: members only, no messages to form it).
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<int> members;
    const int half = (world.size() + 1) / 2;
    for (int r = world.size() - 1; r >= 0; --r)
      if (pass == 0 ? r % 2 == world.rank() % 2 : (r < half) == (world.rank() < half)) members.push_back(r);
    Comm group = world.subgroup(members);
    ASSERT_FALSE(group.is_null());
    ASSERT_EQ(group.size(), static_cast<int>(members.size()));
    ASSERT_EQ(members[static_cast<std::size_t>(group.rank())], world.rank());
    for (Collective c : {Collective::ring, Collective::doubling, Collective::tree}) {
      std::vector<double> x{static_cast<double>(world.rank()), 1.0 + world.rank() * world.rank()};
      GroupAllreduce(c).average(group, x);
      double sum = 0, squares = 0;
      for (int r : members) {
        sum += r;
        squares += 1.0 + r * r;
      }
      const double m = static_cast<double>(members.size());
      EXPECT_NEAR(x[0], sum / m, 1e-12) << "pass " << pass;
      EXPECT_NEAR(x[1], squares / m, 1e-12) << "pass " << pass;
    }
    // A subgroup shares the parent's traffic counter.
    EXPECT_EQ(world.traffic().bytes_sent, group.traffic().bytes_sent);
  }
  // Only members may make the view.
  std::vector<int> others;
  for (int r = 0; r < world.size(); ++r)
    if (r != world.rank()) others.push_back(r);
  EXPECT_THROW(world.subgroup(others), Error);
}

// Odd and even ranks, each group in descending order (group rank != world rank).
std::vector<int> parity_group(const Comm& world) {
  std::vector<int> members;
  for (int r = world.size() - 1; r >= 0; --r)
    if (r % 2 == world.rank() % 2) members.push_back(r);
  return members;
}

TEST(GroupForm, CommunicatorGivesTheViewsBitsAndTraffic) {
  Comm world = Comm::duplicate(MPI_COMM_WORLD);
  const std::vector<int> members = parity_group(world);
  for (Collective c : {Collective::ring, Collective::doubling, Collective::tree, Collective::butterfly}) {
    std::vector<double> by_view(257), by_comm(257);
    for (std::size_t k = 0; k < by_view.size(); ++k) by_view[k] = by_comm[k] = input(world.rank(), k);
    const std::uint64_t start = world.traffic().bytes_sent;
    Comm view = form_group(world, members, GroupForm::view);
    GroupAllreduce(c).average(view, by_view);
    const std::uint64_t view_bytes = world.traffic().bytes_sent - start;
    {
      Comm group = form_group(world, members, GroupForm::comm);
      ASSERT_TRUE(group.is_communicator());
      ASSERT_EQ(group.rank(), view.rank());
      ASSERT_EQ(&group.traffic(), &world.traffic());  // one counter for the whole trial
      GroupAllreduce(c).average(group, by_comm);
    }  // freed here: MPI_Comm_free, as at the end of a round
    EXPECT_EQ(world.traffic().bytes_sent - start, 2 * view_bytes) << to_string(c);
    EXPECT_EQ(std::memcmp(by_view.data(), by_comm.data(), by_view.size() * sizeof(double)), 0) << to_string(c);
  }
  std::vector<int> others;
  for (int r = 0; r < world.size(); ++r)
    if (r != world.rank()) others.push_back(r);
  EXPECT_THROW(world.create_group(others), Error);  // only members may make it
}

TEST(GroupForm, MpiAllreduceNeedsACommunicatorAndMatchesTheMean) {
  Comm world = Comm::duplicate(MPI_COMM_WORLD);
  const std::vector<int> members = parity_group(world);
  std::vector<double> x{static_cast<double>(world.rank()), 1.0 + world.rank() * world.rank()};
  if (members.size() > 1) {
    Comm view = form_group(world, members, GroupForm::view);
    EXPECT_THROW(GroupAllreduce(Collective::mpi).average(view, x), Error);
  }
  Comm group = form_group(world, members, GroupForm::comm);
  GroupAllreduce(Collective::mpi).average(group, x);
  double sum = 0, squares = 0;
  for (int r : members) {
    sum += r;
    squares += 1.0 + r * r;
  }
  const double m = static_cast<double>(members.size());
  EXPECT_NEAR(x[0], sum / m, 1e-12 * std::max(1.0, sum / m));
  EXPECT_NEAR(x[1], squares / m, 1e-12 * std::max(1.0, squares / m));
}

// The measurement's byte counter: per-peer counts near 2^60 are not exact in a
// double, and their sum is the trace's bytes_sent, which must be exact.
TEST(StatsReduction, BytesSentSumIsExactPast2To53) {
  StatsReduction stats(MPI_COMM_WORLD, 1);
  const int n = stats.comm().size();
  const auto bytes_of = [](int rank) {
    return (std::uint64_t{1} << 60) / 64 + 2 * static_cast<std::uint64_t>(rank) + 1;
  };
  PeerTally tally;
  tally.bytes_sent = bytes_of(stats.comm().rank());
  stats.vector()[0] = 0;
  const Totals totals = stats.reduce(tally);
  if (stats.comm().rank() != 0) return;
  std::uint64_t expected = 0;
  for (int r = 0; r < n; ++r) expected += bytes_of(r);
  EXPECT_EQ(totals.bytes_sent, expected);
}

}  // namespace
}  // namespace avb
