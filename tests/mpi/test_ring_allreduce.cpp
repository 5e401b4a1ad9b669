// Ring all-reduce against the exact sum, for many lengths on the job's size.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/comm.hpp"
#include "core/rng.hpp"
#include "protocols/ring_allreduce.hpp"

namespace avb {
namespace {

// Every rank can regenerate every rank's input from the keyed stream, so each
// computes the reference itself, in long double.
double input(int rank, std::size_t k) {
  return Stream(42, StreamId::test).normal(1, static_cast<std::uint64_t>(rank), k) * (1 + rank % 3);
}

class RingAllreduceTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(RingAllreduceTest, SumAndMeanMatchExactReference) {
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::size_t length = GetParam();
  std::vector<double> x(length), y(length);
  for (std::size_t k = 0; k < length; ++k) x[k] = y[k] = input(comm.rank(), k);
  RingAllreduce ring;
  ring.sum(comm, x);
  ring.average(comm, y);
  for (std::size_t k = 0; k < length; ++k) {
    long double exact = 0, magnitude = 0;
    for (int r = 0; r < n; ++r) {
      exact += input(r, k);
      magnitude += std::fabs(input(r, k));
    }
    ASSERT_LE(std::fabs(x[k] - static_cast<double>(exact)), 1e-12 * static_cast<double>(magnitude)) << "k=" << k;
    ASSERT_LE(std::fabs(y[k] - static_cast<double>(exact / n)), 1e-12 * static_cast<double>(magnitude / n));
  }
  // Every rank must hold the very same bits (the all-gather copies finished chunks).
  std::vector<double> root(y);
  MPI_Bcast(root.data(), static_cast<int>(length), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  for (std::size_t k = 0; k < length; ++k) ASSERT_EQ(root[k], y[k]);
}

TEST_P(RingAllreduceTest, TrafficIsTwiceNMinusOneOverNOfTheVector) {
  Comm comm = Comm::duplicate(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::size_t length = GetParam();
  std::vector<double> x(length, 1.0);
  RingAllreduce ring;
  ring.sum(comm, x);
  std::uint64_t mine = comm.traffic().bytes_sent, total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  // Each chunk crosses n-1 links in each phase: 2(n-1) L doubles in all.
  EXPECT_EQ(total, 2ull * static_cast<std::uint64_t>(n - 1) * length * sizeof(double));
  EXPECT_EQ(comm.traffic().messages_sent, n == 1 ? 0u : 2u * static_cast<std::uint64_t>(n - 1));
  for (double v : x) ASSERT_EQ(v, static_cast<double>(n));
}

INSTANTIATE_TEST_SUITE_P(Lengths, RingAllreduceTest,
                         ::testing::Values(0, 1, 2, 3, 5, 7, 8, 9, 64, 1000, 100003));

TEST(RingAllreduce, WorksOnSubCommunicators) {
  Comm world = Comm::duplicate(MPI_COMM_WORLD);
  // Odd ranks form one group, even ranks another (create_group: members only).
  std::vector<int> members;
  for (int r = world.rank() % 2; r < world.size(); r += 2) members.push_back(r);
  Comm group = world.create_group(members, 9);
  ASSERT_FALSE(group.is_null());
  ASSERT_EQ(group.size(), static_cast<int>(members.size()));
  std::vector<double> x{static_cast<double>(world.rank())};
  RingAllreduce ring;
  ring.average(group, x);
  double expected = 0;
  for (int r : members) expected += r;
  EXPECT_DOUBLE_EQ(x[0], expected / static_cast<double>(members.size()));
  // Sub-communicators share the parent's traffic counter.
  EXPECT_EQ(world.traffic().bytes_sent, group.traffic().bytes_sent);
}

}  // namespace
}  // namespace avb
