// CHOCO-Gossip against what the algorithm promises, on the sequential engine
// (the MPI runs write the same rows: tests/mpi): plain gossip
// when nothing is compressed and gamma = 1, the mean kept whatever the quantizer
// and whatever fails, linear convergence under compression, and traffic that is
// the encoding alone while nobody misses an update.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "codecs/compress.hpp"
#include "run/averaging.hpp"
#include "support/sequential_trial.hpp"

namespace avb {
namespace {

AveragingOptions choco_options(const std::string& quantizer, double gamma, double fail_rate, int rounds) {
  AveragingOptions o;
  o.protocol.name = "choco";
  o.protocol.topology = parse_topology("ring");
  o.protocol.quantizer = parse_quantizer(quantizer);
  o.protocol.choco.gamma = gamma;
  o.fail_rate = fail_rate;
  o.dim = 4;
  o.rounds = rounds;
  o.trials = 1;
  o.seed = 7;
  o.stop_at_target = false;
  return o;
}

TEST(ChocoTheory, UncompressedWithUnitStepIsGossip) {
  AveragingOptions gossip = choco_options("none", 1.0, 0.0, 40);
  gossip.protocol.name = "gossip";
  const TrialRecord a = test::sequential_trial(choco_options("none", 1.0, 0.0, 40), 16, 0);
  const TrialRecord b = test::sequential_trial(gossip, 16, 0);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (std::size_t t = 1; t < a.rows.size(); ++t)
    EXPECT_NEAR(a.rows[t].variance, b.rows[t].variance, 1e-9 * b.rows[t].variance) << "round " << t;
  EXPECT_LT(a.rows.back().variance, 1e-2 * a.rows.front().variance);
}

// The update's terms cancel in pairs (symmetric weights), so the mean stays where
// it started up to rounding, while gossip's renormalised rows move it.
TEST(ChocoTheory, KeepsTheMeanWhateverFailsAndWhateverTheQuantizer) {
  for (const char* quantizer : {"none", "fp16", "uniform8", "stochastic:2", "lattice"}) {
    const TrialRecord r = test::sequential_trial(choco_options(quantizer, 0.3, 0.3, 60), 32, 0);
    for (const RoundRow& row : r.rows) EXPECT_LT(row.mean_drift, 1e-26) << quantizer << " round " << row.round;
    EXPECT_LT(r.rows.back().variance, 0.5 * r.rows.front().variance) << quantizer;
  }
  AveragingOptions gossip = choco_options("none", 1.0, 0.3, 60);
  gossip.protocol.name = "gossip";
  EXPECT_GT(test::sequential_trial(gossip, 32, 0).rows.back().mean_drift, 1e-6);
}

// Compression errors shrink with x - x̂, so the variance keeps falling
// geometrically instead of stalling at the quantizer's resolution, and for a small
// enough gamma as fast as uncompressed gamma-gossip x <- x + gamma (W - I) x does:
// per round by (1 - gamma (1 - lambda_2))^2, lambda_2 = 1/3 + 2/3 cos(2 pi / N) on
// the ring with uniform weights. The rate is measured between rounds 300 and 600.
TEST(ChocoTheory, ConvergesLinearlyUnderCompression) {
  const int n = 16;
  const double gamma = 0.4, pi = std::acos(-1.0);
  const double lambda2 = 1.0 / 3.0 + 2.0 / 3.0 * std::cos(2.0 * pi / n);
  const double theory = -2.0 * std::log(1.0 - gamma * (1.0 - lambda2));
  for (const char* quantizer : {"stochastic:4", "uniform8", "fp16"}) {
    const TrialRecord r = test::sequential_trial(choco_options(quantizer, gamma, 0.0, 600), n, 0);
    const double rate = std::log(r.rows[300].variance / r.rows[600].variance) / 300.0;
    std::printf("choco %s N=%d ring gamma %.1f: variance decay %.5f per round, uncompressed theory %.5f (%+.1f%%)\n",
                quantizer, n, gamma, rate, theory, 100.0 * (rate / theory - 1.0));
    EXPECT_NEAR(rate, theory, 0.03 * theory) << quantizer;
    EXPECT_LT(r.rows[600].variance, 1e-10 * r.rows.front().variance) << quantizer;
  }
}

// Without failures every peer hears every update of its neighbours: each round
// costs one encoding per directed edge, nothing more.
TEST(ChocoTraffic, OnlyTheEncodingWhileNobodyMissesAnUpdate) {
  const int n = 8;
  const AveragingOptions o = choco_options("fp16", 0.5, 0.0, 10);
  const TrialRecord r = test::sequential_trial(o, n, 0);
  const std::uint64_t per_round = 2ull * n * Quantizer(o.protocol.quantizer).encoded_bytes(4);
  for (std::size_t t = 1; t < r.rows.size(); ++t) EXPECT_EQ(r.rows[t].bytes_sent, per_round * t);
}

}  // namespace
}  // namespace avb
