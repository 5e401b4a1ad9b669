// Keyed Philox streams: determinism, independence of keys, and distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

#include "core/rng.hpp"

namespace avb {
namespace {

TEST(Rng, SameKeyAndCounterGiveSameDraw) {
  const Stream a(7, StreamId::failures), b(7, StreamId::failures);
  for (std::uint64_t t = 0; t < 50; ++t) EXPECT_EQ(a.bits(t, 3, 1), b.bits(t, 3, 1));
  EXPECT_EQ(a.normal(5, 2, 9), b.normal(5, 2, 9));
}

TEST(Rng, EveryKeyAndCounterPartMatters) {
  const Stream s(7, StreamId::failures);
  const std::uint64_t base = s.bits(1, 2, 3);
  EXPECT_NE(base, Stream(8, StreamId::failures).bits(1, 2, 3));
  EXPECT_NE(base, Stream(7, StreamId::initial_values).bits(1, 2, 3));
  EXPECT_NE(base, s.bits(2, 2, 3));
  EXPECT_NE(base, s.bits(1, 3, 3));
  EXPECT_NE(base, s.bits(1, 2, 4));
}

// Known answers pin the reproducibility contract: if these change, every trace
// ever written stops being reproducible. Change them only with a schema bump.
TEST(Rng, KnownAnswers) {
  const Stream s(0, StreamId::initial_values);
  EXPECT_EQ(s.bits(0, 0, 0), 16515616122949719070ull);
  EXPECT_DOUBLE_EQ(s.normal(0, 0, 0), -0.46022893429172657);
  EXPECT_DOUBLE_EQ(Stream(12345, StreamId::failures).uniform(3, 17, 0), 0.63384624961533587);
}

TEST(Rng, UniformMomentsAndRange) {
  const Stream s(1, StreamId::test);
  const int n = 200000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double u = s.uniform(0, 0, static_cast<std::uint64_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    const double v = s.uniform_open0(0, 0, static_cast<std::uint64_t>(i));
    ASSERT_GT(v, 0.0);
    ASSERT_LE(v, 1.0);
    sum += u;
    sum2 += u * u;
  }
  // Standard errors: mean 1/sqrt(12 n) = 6.5e-4; bounds at 5 sigma (false alarm < 1e-6).
  EXPECT_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(sum2 / n - (sum / n) * (sum / n), 1.0 / 12, 5 * std::sqrt(1.0 / 180 / n));
}

TEST(Rng, NormalMoments) {
  const Stream s(2, StreamId::test);
  const int n = 200000;
  double m1 = 0, m2 = 0, m4 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = s.normal(0, static_cast<std::uint64_t>(i % 100), static_cast<std::uint64_t>(i / 100));
    m1 += z;
    m2 += z * z;
    m4 += z * z * z * z;
  }
  m1 /= n, m2 /= n, m4 /= n;
  // 5-sigma bounds: var(z) = 1, var(z^2) = 2, var(z^4) = 96.
  EXPECT_NEAR(m1, 0.0, 5 * std::sqrt(1.0 / n));
  EXPECT_NEAR(m2, 1.0, 5 * std::sqrt(2.0 / n));
  EXPECT_NEAR(m4, 3.0, 5 * std::sqrt(96.0 / n));
}

TEST(Rng, BelowIsInRangeAndUniform) {
  const Stream s(3, StreamId::test);
  const std::uint64_t k = 7;
  const int n = 70000;
  std::vector<int> counts(k, 0);
  for (int i = 0; i < n; ++i) {
    const auto v = s.below(k, 0, 0, static_cast<std::uint64_t>(i));
    ASSERT_LT(v, k);
    ++counts[v];
  }
  // Pearson chi-square with 6 degrees of freedom: P(chi2 > 30) ~ 4e-5.
  double chi2 = 0;
  const double expected = static_cast<double>(n) / k;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 30.0);
  EXPECT_EQ(s.below(1, 0, 0, 0), 0u);
}

}  // namespace
}  // namespace avb
