// The lattice fallback of quantized gossip and pairwise, on the sequential engine
// (which the MPI engines match peer by peer in tests/mpi): a message
// that does not decode is sent again as the value itself, so the protocols
// converge from a spread far beyond q*eps/2, and the bytes count what was sent
// (docs/protocols.md, "Quantized gossip and pairwise"). Also: the default lattice
// fits N(0, 1) data.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "codecs/compress.hpp"
#include "run/averaging.hpp"
#include "sim/topology.hpp"
#include "support/sequential_trial.hpp"

namespace avb {
namespace {

AveragingOptions lattice_run(const std::string& protocol, const std::string& topology, std::uint32_t q, double eps,
                             int dim, int rounds) {
  AveragingOptions o;
  o.protocol.name = protocol;
  o.protocol.topology = parse_topology(topology);
  o.protocol.quantizer = parse_quantizer("lattice", q, eps);
  o.dim = dim;
  o.rounds = rounds;
  o.trials = 1;
  o.seed = 11;
  return o;
}

// Messages per round without peer failures: gossip on the hypercube of 16 peers
// sends 4 per peer, pairwise on the complete graph of an even N one per peer.
std::uint64_t messages(const std::string& protocol, int n) { return protocol == "gossip" ? 4u * n : 1u * n; }

class Fallback : public ::testing::TestWithParam<const char*> {};

// q = 4, eps = 1e-3 decodes within 2e-3 of the receiver's value: nearly every
// message of N(0, 1) values fails at first. Without a fallback, a peer whose
// partners' values all fail keeps its own, and the variance stays near 1.
// (Gossip's floor depends on the graph: rounding to the lattice is deterministic,
// and on a ring of 16 peers the values stop a few eps apart, variance 4.8e-6 with
// q = 4; on the hypercube 4.4e-8.)
TEST_P(Fallback, ConvergesToTheEpsFloorFromAnySpread) {
  const std::string protocol = GetParam();
  const int n = 16, dim = 3;
  const double eps = 1e-3;
  const AveragingOptions o =
      resolve(lattice_run(protocol, protocol == "gossip" ? "hypercube" : "complete", 4, eps, dim, 300), n);
  const TrialRecord trial = test::sequential_trial(o, n, 0);
  ASSERT_EQ(trial.rows.size(), 301u);
  EXPECT_GT(trial.rows[1].decode_failures, static_cast<int>(messages(protocol, n) / 2)) << "the fallback engages";
  EXPECT_LE(trial.rows.back().variance, eps * eps) << "the eps floor";
  EXPECT_LT(trial.rows.back().variance, 1e-4 * trial.rows.front().variance);
  // Bytes: every message its encoding plus the receiver's one-byte verdict, and
  // 8 bytes a value for each message sent again.
  const Quantizer quantizer(o.protocol.quantizer);
  for (std::size_t r = 1; r < trial.rows.size(); ++r) {
    const RoundRow &row = trial.rows[r], &before = trial.rows[r - 1];
    const std::uint64_t want = messages(protocol, n) * (quantizer.encoded_bytes(dim) + 1) +
                               static_cast<std::uint64_t>(row.decode_failures) * 8 * dim;
    ASSERT_EQ(row.bytes_sent - before.bytes_sent, want) << "round " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Lattice, Fallback, ::testing::Values("gossip", "pairwise"));

// The defaults decode any two values less than q*eps/2 = 16 apart: N(0, 1) data
// at N = 256, dim 100 never fails (the former eps = 1e-4, q*eps/2 = 3.3, failed
// most first-round messages), and the floor is below eps^2.
TEST(LatticeDefaults, FitNormalData) {
  EXPECT_EQ(kDefaultLatticeQ, 65536u);
  EXPECT_EQ(kDefaultLatticeQ * kDefaultLatticeEps / 2, 16.0);
  const int n = 256, dim = 100;
  for (const char* protocol : {"gossip", "pairwise"}) {
    AveragingOptions o = lattice_run(protocol, protocol == std::string("gossip") ? "ring" : "complete",
                                     kDefaultLatticeQ, kDefaultLatticeEps, dim, 40);
    const TrialRecord trial = test::sequential_trial(resolve(o, n), n, 0);
    int failures = 0;
    for (const RoundRow& row : trial.rows) failures += row.decode_failures;
    EXPECT_EQ(failures, 0) << protocol;
    if (std::string(protocol) == "pairwise") {
      EXPECT_LE(trial.rows.back().variance, kDefaultLatticeEps * kDefaultLatticeEps) << protocol;
    }
  }
}

}  // namespace
}  // namespace avb
