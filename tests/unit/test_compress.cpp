// Quantizers (src/codecs/compress.hpp): flags, encoded sizes, per-format error
// bounds, the lattice quantizer's decode-failure detection, and the stochastic
// quantizer's unbiasedness with keyed dither.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "codecs/compress.hpp"
#include "test_support.hpp"

namespace avb {
namespace {

using test::config_error;
using test::starts_with;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> normal_vector(std::size_t d, std::uint64_t seed, double scale = 1.0, double shift = 0.0) {
  const Stream s(seed, StreamId::test);
  std::vector<double> x(d);
  for (std::size_t k = 0; k < d; ++k) x[k] = shift + scale * s.normal(0, 0, k);
  return x;
}

// Encodes and decodes x; `reference` only matters for lattice.
std::vector<double> round_trip(const Quantizer& q, const std::vector<double>& x, const std::vector<double>& reference,
                               DecodeResult* result = nullptr, EncodeContext context = {}) {
  std::vector<std::byte> bytes;
  q.encode(x, context, bytes);
  EXPECT_EQ(bytes.size(), q.encoded_bytes(x.size()));
  std::vector<double> out(x.size());
  const DecodeResult r = q.decode(bytes, reference, out);
  if (result) *result = r;
  return out;
}

std::vector<double> round_trip(const Quantizer& q, const std::vector<double>& x, DecodeResult* result = nullptr,
                               EncodeContext context = {}) {
  return round_trip(q, x, x, result, context);
}

QuantizerSpec lattice(std::uint32_t q, double eps) {
  QuantizerSpec spec;
  spec.kind = QuantizerKind::lattice;
  spec.lattice_q = q;
  spec.lattice_eps = eps;
  return spec;
}

QuantizerSpec stochastic(int bits) {
  QuantizerSpec spec;
  spec.kind = QuantizerKind::stochastic;
  spec.bits = bits;
  return spec;
}

// ---- flags ----------------------------------------------------------------------

TEST(QuantizerSpec, ParsesEveryKind) {
  EXPECT_EQ(parse_quantizer("none").kind, QuantizerKind::none);
  EXPECT_EQ(parse_quantizer("fp16").kind, QuantizerKind::fp16);
  EXPECT_EQ(parse_quantizer("uniform8").kind, QuantizerKind::uniform8);
  const QuantizerSpec s = parse_quantizer("stochastic:4");
  EXPECT_EQ(s.kind, QuantizerKind::stochastic);
  EXPECT_EQ(s.bits, 4);
  EXPECT_EQ(parse_quantizer("stochastic:1").bits, 1);
  EXPECT_EQ(parse_quantizer("stochastic:16").bits, 16);
  const QuantizerSpec l = parse_quantizer("lattice", 256, 0.5);
  EXPECT_EQ(l.kind, QuantizerKind::lattice);
  EXPECT_EQ(l.lattice_q, 256u);
  EXPECT_EQ(l.lattice_eps, 0.5);
  EXPECT_EQ(parse_quantizer("lattice").lattice_q, kDefaultLatticeQ);
  EXPECT_EQ(parse_quantizer("lattice", 4294967295).lattice_q, 4294967295u);
  for (const char* text : {"none", "fp16", "uniform8", "stochastic:1", "stochastic:7", "stochastic:16", "lattice"})
    EXPECT_EQ(to_string(parse_quantizer(text)), text);
}

TEST(QuantizerSpec, ErrorsNameTheFlagAndTheChoices) {
  const std::string accepted = "is not one of none, fp16, uniform8, stochastic:B (B in 1..16), lattice";
  for (const char* text : {"", "fp32", "Lattice", "stochastic", "stochastic:", "stochastic:0", "stochastic:17",
                           "stochastic:-1", "stochastic:4x", "stochastic: 4", "uniform8 "}) {
    const std::string message = config_error([&] { parse_quantizer(text); });
    EXPECT_EQ(message, "--quantizer: '" + std::string(text) + "' " + accepted) << text;
  }
  for (std::int64_t q : {std::int64_t{1}, std::int64_t{0}, std::int64_t{-3}, std::int64_t{4294967296}}) {
    const std::string message = config_error([&] { parse_quantizer("lattice", q); });
    EXPECT_TRUE(starts_with(message, "--lattice-q: " + std::to_string(q) + " ")) << message;
  }
  for (double eps : {0.0, -1.0, kInf, kNaN}) {
    const std::string message = config_error([&] { parse_quantizer("lattice", 256, eps); });
    EXPECT_TRUE(starts_with(message, "--lattice-eps: ")) << message;
  }
  // A spec built in code gets the same checks.
  EXPECT_TRUE(starts_with(config_error([] { Quantizer q(stochastic(0)); }), "--quantizer: 'stochastic:0'"));
  EXPECT_TRUE(starts_with(config_error([] { Quantizer q(lattice(1, 0.1)); }), "--lattice-q: 1 "));
  EXPECT_TRUE(starts_with(config_error([] { Quantizer q(lattice(2, -0.1)); }), "--lattice-eps: -0.1 "));
}

// ---- sizes and determinism ------------------------------------------------------------

TEST(QuantizerSizes, EncodedSizesFollowTheFormulas) {
  for (std::size_t d : {0u, 1u, 2u, 3u, 7u, 8u, 9u, 1000u, 1001u}) {
    EXPECT_EQ(Quantizer(parse_quantizer("none")).encoded_bytes(d), 8 * d);
    EXPECT_EQ(Quantizer(parse_quantizer("fp16")).encoded_bytes(d), 2 * d);
    EXPECT_EQ(Quantizer(parse_quantizer("uniform8")).encoded_bytes(d), 16 + d);
    for (int b = 1; b <= 16; ++b)
      EXPECT_EQ(Quantizer(stochastic(b)).encoded_bytes(d), 16 + (static_cast<std::size_t>(b) * d + 7) / 8);
    // ceil(log2 q) bits per coordinate, plus a status byte and a 64-bit checksum.
    const std::pair<std::uint32_t, std::size_t> widths[] = {{2, 1},   {3, 2},     {4, 2},         {5, 3},
                                                            {255, 8}, {256, 8},   {257, 9},       {65536, 16},
                                                            {65537, 17}, {4294967295u, 32}};
    for (const auto& [q, bits] : widths)
      EXPECT_EQ(Quantizer(lattice(q, 0.1)).encoded_bytes(d), 9 + (bits * d + 7) / 8) << q;
  }
  // What encode writes is what encoded_bytes says, for any values.
  const std::vector<double> x = normal_vector(37, 1);
  for (const char* text : {"none", "fp16", "uniform8", "stochastic:5", "lattice"}) {
    const Quantizer q(parse_quantizer(text));
    std::vector<std::byte> bytes(3);
    q.encode(x, {}, bytes);
    EXPECT_EQ(bytes.size(), q.encoded_bytes(x.size())) << text;
  }
}

TEST(Compress, SameContextGivesSameBytes) {
  const std::vector<double> x = normal_vector(1000, 2);
  const EncodeContext context{11, 5, 3, 2};
  for (const char* text : {"none", "fp16", "uniform8", "stochastic:1", "stochastic:4", "stochastic:16", "lattice"}) {
    const Quantizer q1(parse_quantizer(text)), q2(parse_quantizer(text));
    std::vector<std::byte> a, b;
    q1.encode(x, context, a);
    q2.encode(x, context, b);
    EXPECT_EQ(a, b) << text;
  }
  // The stochastic dither depends on every part of the context...
  const Quantizer q(stochastic(2));
  std::vector<std::byte> base, other;
  q.encode(x, context, base);
  for (EncodeContext c : {EncodeContext{12, 5, 3, 2}, EncodeContext{11, 6, 3, 2}, EncodeContext{11, 5, 4, 2},
                          EncodeContext{11, 5, 3, 3}}) {
    q.encode(x, c, other);
    EXPECT_NE(base, other);
  }
  // ... and is word k mod 4 of block (round, peer, k / 4, message) of the dither
  // stream, the reproducibility contract (the range is [min, max], 3 levels).
  const Stream dither(11, StreamId::dither);
  std::vector<double> out(x.size());
  ASSERT_TRUE(q.decode(base, {}, out).ok);
  const double low = *std::min_element(x.begin(), x.end()), high = *std::max_element(x.begin(), x.end());
  const double step = (high - low) / 3.0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double t = (x[k] - low) / step, fl = std::floor(t);
    const double u = static_cast<double>(dither.block(5, 3, k / 4, 2).w[k % 4] >> 11) * 0x1.0p-53;
    const double level = std::min(3.0, fl + (u < t - fl ? 1.0 : 0.0));
    EXPECT_EQ(out[k], low + level * step) << k;
  }
}

TEST(Compress, SizeMismatchesAreErrors) {
  const std::vector<double> x = normal_vector(10, 3);
  for (const char* text : {"none", "fp16", "uniform8", "stochastic:3", "lattice"}) {
    const Quantizer q(parse_quantizer(text));
    std::vector<std::byte> bytes;
    q.encode(x, {}, bytes);
    std::vector<double> out(11);
    EXPECT_THROW(q.decode(bytes, std::vector<double>(11), out), Error) << text;
  }
  const Quantizer q(parse_quantizer("lattice"));
  std::vector<std::byte> bytes;
  q.encode(x, {}, bytes);
  std::vector<double> out(10);
  EXPECT_THROW(q.decode(bytes, {}, out), Error);  // lattice needs a reference
}

TEST(Compress, NoneIsExact) {
  std::vector<double> x = normal_vector(100, 4);
  x[0] = kInf, x[1] = -0.0, x[2] = 5e-324, x[3] = kNaN;
  DecodeResult r;
  const std::vector<double> y = round_trip(Quantizer(parse_quantizer("none")), x, std::vector<double>{}, &r);
  EXPECT_TRUE(r.ok);
  for (std::size_t k = 0; k < x.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint64_t>(y[k]), std::bit_cast<std::uint64_t>(x[k]));
}

// ---- fp16 ---------------------------------------------------------------------

TEST(QuantizerFp16, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const double v = half_to_double(static_cast<std::uint16_t>(h));
    if (std::isnan(v)) {
      EXPECT_TRUE(((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff) != 0) << h;
      EXPECT_TRUE(std::isnan(half_to_double(double_to_half(v))));
      continue;
    }
    ASSERT_EQ(double_to_half(v), h) << h << " " << v;
  }
  EXPECT_EQ(half_to_double(0x3c00), 1.0);
  EXPECT_EQ(half_to_double(0x7bff), 65504.0);
  EXPECT_EQ(half_to_double(0x0001), 0x1.0p-24);
  EXPECT_EQ(half_to_double(0x0400), 0x1.0p-14);
  EXPECT_EQ(half_to_double(0xc000), -2.0);
}

TEST(QuantizerFp16, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(double_to_half(1.0 + 0x1.0p-11), 0x3c00);                  // tie: down to even
  EXPECT_EQ(double_to_half(1.0 + 3 * 0x1.0p-11), 0x3c02);              // tie: up to even
  EXPECT_EQ(double_to_half(1.0 + 0x1.0p-11 + 0x1.0p-40), 0x3c01);      // above the tie
  EXPECT_EQ(double_to_half(2.0 - 0x1.0p-12), 0x4000);                  // carries into the exponent
  EXPECT_EQ(double_to_half(0x1.0p-25), 0x0000);                        // subnormal tie to even (0)
  EXPECT_EQ(double_to_half(3 * 0x1.0p-25), 0x0002);                    // subnormal tie to even (2)
  EXPECT_EQ(double_to_half(0x1.0p-14 - 0x1.0p-26), 0x0400);            // rounds up to the smallest normal
  EXPECT_EQ(double_to_half(1e-30), 0x0000);
  EXPECT_EQ(double_to_half(-1e-30), 0x8000);
  EXPECT_EQ(double_to_half(-0.0), 0x8000);
  // Saturating: finite values beyond 65504 (where round-to-nearest would give inf
  // from 65520 on) become +-65504; infinities and NaN are kept.
  for (double big : {65504.0, 65519.0, 65520.0, 70000.0, 1e300})
    EXPECT_EQ(double_to_half(big), 0x7bff) << big;
  EXPECT_EQ(double_to_half(-1e10), 0xfbff);
  EXPECT_EQ(double_to_half(kInf), 0x7c00);
  EXPECT_EQ(double_to_half(-kInf), 0xfc00);
  EXPECT_TRUE(std::isnan(half_to_double(double_to_half(kNaN))));
}

TEST(QuantizerFp16, RelativeErrorBoundInTheNormalRange) {
  const Stream s(5, StreamId::test);
  const Quantizer q(parse_quantizer("fp16"));
  std::vector<double> x(20000);
  for (std::size_t k = 0; k < x.size(); ++k) {
    // log-uniform magnitudes over the normal range [2^-14, 65504], both signs
    const double m = std::exp2(-14.0 + 29.999 * s.uniform(0, 0, k));
    x[k] = (s.bits(0, 1, k) & 1) ? -m : m;
  }
  const std::vector<double> y = round_trip(q, x);
  for (std::size_t k = 0; k < x.size(); ++k) {
    ASSERT_LE(std::fabs(y[k] - x[k]), 0x1.0p-11 * std::fabs(x[k])) << x[k];
#if defined(__FLT16_MAX__)
    // The compiler's correctly rounded conversion agrees bit for bit.
    ASSERT_EQ(double_to_half(x[k]), std::bit_cast<std::uint16_t>(static_cast<_Float16>(x[k]))) << x[k];
#endif
  }
  // Subnormal range: absolute error at most half a unit, 2^-25.
  for (std::size_t k = 0; k < 5000; ++k) {
    const double v = 0x1.0p-14 * s.uniform(1, 0, k);
    ASSERT_LE(std::fabs(half_to_double(double_to_half(v)) - v), 0x1.0p-25) << v;
  }
}

// ---- uniform8 -----------------------------------------------------------------

TEST(QuantizerUniform8, HalfABucketInsideSixSigma) {
  const Quantizer q(parse_quantizer("uniform8"));
  for (std::uint64_t seed : {6u, 7u, 8u}) {
    std::vector<double> x = normal_vector(5000, seed, 3.0 * static_cast<double>(seed), 100.0);
    double mean = 0, ss = 0;
    for (double v : x) mean += v;
    mean /= static_cast<double>(x.size());
    for (double v : x) ss += (v - mean) * (v - mean);
    const double sigma = std::sqrt(ss / static_cast<double>(x.size()));
    const double half_bucket = 12 * sigma / 256 / 2;
    DecodeResult r;
    const std::vector<double> y = round_trip(q, x, &r);
    EXPECT_TRUE(r.ok);
    for (std::size_t k = 0; k < x.size(); ++k) {
      ASSERT_LE(std::fabs(x[k] - mean), 6 * sigma);  // normal data: all inside
      ASSERT_LE(std::fabs(y[k] - x[k]), half_bucket * (1 + 1e-9)) << k;
    }
  }
}

TEST(QuantizerUniform8, ClipsOutliersAndKeepsConstants) {
  const Quantizer q(parse_quantizer("uniform8"));
  // One outlier among 1000 zeros: sigma = 1000 * sqrt(999) / 1000 ~ 31.6, so
  // mean + 6 sigma ~ 190.6 is far below it; it lands in the last bucket.
  std::vector<double> x(1000, 0.0);
  x[17] = 1000.0;
  const double mean = 1.0, sigma = std::sqrt((999.0 * 1.0 + 999.0 * 999.0) / 1000.0);
  const std::vector<double> y = round_trip(q, x);
  EXPECT_NEAR(y[17], mean + 6 * sigma - 12 * sigma / 512, 1e-9);
  EXPECT_NEAR(y[0], 0.0, 12 * sigma / 512 * (1 + 1e-9));

  const std::vector<double> constant(50, -2.5);
  EXPECT_EQ(round_trip(q, constant), constant);
  EXPECT_TRUE(round_trip(q, std::vector<double>{}).empty());

  std::vector<double> bad = normal_vector(20, 9);
  bad[3] = kNaN;
  DecodeResult r;
  const std::vector<double> z = round_trip(q, bad, &r);
  EXPECT_FALSE(r.ok);
  for (double v : z) EXPECT_TRUE(std::isnan(v));
  bad[3] = 1e308, bad[4] = -1e308;  // finite, but 12 sigma overflows
  round_trip(q, bad, &r);
  EXPECT_FALSE(r.ok);
}

// ---- stochastic:B -------------------------------------------------------------

TEST(QuantizerStochastic, WithinOneLevelAndExactAtTheEnds) {
  const std::vector<double> x = normal_vector(3001, 10, 2.0, -1.0);
  const double low = *std::min_element(x.begin(), x.end()), high = *std::max_element(x.begin(), x.end());
  for (int b = 1; b <= 16; ++b) {
    const Quantizer q(stochastic(b));
    const double step = (high - low) / static_cast<double>((1 << b) - 1);
    DecodeResult r;
    const std::vector<double> y = round_trip(q, x, &r, EncodeContext{1, 2, 3, static_cast<std::uint64_t>(b)});
    EXPECT_TRUE(r.ok);
    for (std::size_t k = 0; k < x.size(); ++k) {
      ASSERT_LT(std::fabs(y[k] - x[k]), step * (1 + 1e-9)) << b << " " << k;
      // on the grid
      const double level = (y[k] - low) / step;
      ASSERT_NEAR(level, std::round(level), 1e-6) << b;
      if (x[k] == low) {
        ASSERT_EQ(y[k], low);
      }
    }
  }
  // A constant vector, one value, and nothing at all decode exactly.
  const Quantizer q(stochastic(3));
  EXPECT_EQ(round_trip(q, std::vector<double>(9, 4.25)), std::vector<double>(9, 4.25));
  EXPECT_EQ(round_trip(q, std::vector<double>{-7.0}), std::vector<double>{-7.0});
  EXPECT_TRUE(round_trip(q, std::vector<double>{}).empty());
  DecodeResult r;
  round_trip(q, std::vector<double>{1.0, kInf}, &r);
  EXPECT_FALSE(r.ok);
  round_trip(q, std::vector<double>{-1e308, 1e308}, &r);  // the range overflows
  EXPECT_FALSE(r.ok);
}

// Unbiasedness: with t = (x - min)/step, the level is floor(t) + Bernoulli(p),
// p = t - floor(t). Over n independent encodings (different rounds), the error in
// levels e = l - t has mean 0 and variance p(1 - p). Both statistics below are
// z-scores (normal to within far better than needed at these sample sizes). The
// threshold |z| < 5 has a two-sided false-alarm rate of 5.7e-7 per statistic; the
// per-coordinate check uses |z| < 5.5 (3.8e-8 each, under 2.5e-6 for all 64). The
// seed is fixed, so the test is deterministic; the rates say how unlucky a seed
// would have to be to fail it.
TEST(QuantizerStochastic, RoundingIsUnbiasedWithBernoulliVariance) {
  const std::size_t d = 64;
  const int draws = 20000;
  const int bits = 3;
  const double levels = 7.0;
  // Values in [0, 1] with both ends present, so the range is [0, 1] in every draw.
  const Stream s(12, StreamId::test);
  std::vector<double> x(d);
  for (std::size_t k = 0; k < d; ++k) x[k] = s.uniform(0, 0, k);
  x[0] = 0.0, x[1] = 1.0;
  x[2] = 0.5 / levels;  // exactly p = 1/2
  const double step = 1.0 / levels;

  const Quantizer q(stochastic(bits));
  std::vector<double> t(d), p(d), sum_e(d, 0.0);
  for (std::size_t k = 0; k < d; ++k) {
    t[k] = std::min(x[k] / step, levels);  // as the encoder clamps
    p[k] = t[k] - std::floor(t[k]);
  }
  double sum_e2 = 0.0;
  std::vector<std::byte> bytes;
  std::vector<double> y(d);
  for (int i = 0; i < draws; ++i) {
    q.encode(x, EncodeContext{99, static_cast<std::uint64_t>(i), 0, 0}, bytes);
    ASSERT_TRUE(q.decode(bytes, {}, y).ok);
    for (std::size_t k = 0; k < d; ++k) {
      const double e = std::round(y[k] / step) - t[k];
      sum_e[k] += e;
      sum_e2 += e * e;
    }
  }
  double total_e = 0.0, var_e = 0.0, mean_e2 = 0.0, var_e2 = 0.0, worst = 0.0;
  for (std::size_t k = 0; k < d; ++k) {
    const double v = p[k] * (1 - p[k]);  // Var e = E e^2
    const double e4 = v * (p[k] * p[k] * p[k] + (1 - p[k]) * (1 - p[k]) * (1 - p[k]));
    total_e += sum_e[k];
    var_e += draws * v;
    mean_e2 += draws * v;
    var_e2 += draws * (e4 - v * v);
    if (v > 0) worst = std::max(worst, std::fabs(sum_e[k]) / std::sqrt(draws * v));
    else EXPECT_EQ(sum_e[k], 0.0) << k;  // on a level: always exact
  }
  const double z_mean = total_e / std::sqrt(var_e);
  const double z_var = (sum_e2 - mean_e2) / std::sqrt(var_e2);
  EXPECT_LT(std::fabs(z_mean), 5.0);
  EXPECT_LT(worst, 5.5);
  EXPECT_LT(std::fabs(z_var), 5.0);
  RecordProperty("z_mean", std::to_string(z_mean));
  RecordProperty("z_var", std::to_string(z_var));
}

// ---- lattice --------------------------------------------------------------------

// x = b + delta with every |delta| < (q-1) eps / 2 always decodes, within eps/2.
TEST(Lattice, DecodesWithinHalfEpsNearTheReference) {
  const Stream s(13, StreamId::test);
  for (const auto& [q, eps] : std::vector<std::pair<std::uint32_t, double>>{
           {2, 0.1}, {3, 0.01}, {256, 0.01}, {257, 1e-3}, {65536, 1e-4}, {4294967295u, 1e-9}}) {
    const Quantizer quantizer(lattice(q, eps));
    const double radius = (static_cast<double>(q) - 1) * eps / 2;
    for (std::uint64_t trial = 0; trial < 20; ++trial) {
      const std::size_t d = 257;
      std::vector<double> b(d), x(d);
      for (std::size_t k = 0; k < d; ++k) {
        b[k] = 50.0 * s.normal(trial, q, k);
        x[k] = b[k] + radius * 0.999999 * (2 * s.uniform(trial, q, d + k) - 1);
      }
      DecodeResult r;
      const std::vector<double> y = round_trip(quantizer, x, b, &r);
      ASSERT_TRUE(r.ok) << q << " " << trial;
      for (std::size_t k = 0; k < d; ++k)
        ASSERT_LE(std::fabs(y[k] - x[k]), eps / 2 + 1e-15 * std::fabs(x[k])) << q << " " << k;
    }
  }
  // Decoding against the value itself, and in place (out aliasing the reference).
  const Quantizer quantizer(lattice(256, 0.01));
  const std::vector<double> x = normal_vector(100, 14, 1e3);
  std::vector<double> b = x;
  std::vector<std::byte> bytes;
  quantizer.encode(x, {}, bytes);
  ASSERT_TRUE(quantizer.decode(bytes, b, b).ok);
  for (std::size_t k = 0; k < x.size(); ++k) EXPECT_LE(std::fabs(b[k] - x[k]), 0.005 + 1e-12);
}

// One coordinate beyond (q+1) eps / 2 decodes to the wrong lattice point; the
// checksum catches it every time (a single wrong index always changes it).
TEST(Lattice, DetectsEveryFailure) {
  const Stream s(15, StreamId::test);
  const std::uint32_t q = 256;
  const double eps = 0.01;
  const Quantizer quantizer(lattice(q, eps));
  const std::size_t d = 64;
  for (std::uint64_t trial = 0; trial < 2000; ++trial) {
    std::vector<double> b(d), x(d);
    for (std::size_t k = 0; k < d; ++k) {
      b[k] = s.normal(trial, 0, k);
      x[k] = b[k] + 1.27 * (2 * s.uniform(trial, 1, k) - 1);  // < (q-1) eps / 2 = 1.275
    }
    // One coordinate (or, every fourth trial, many) far off, by up to 40 q eps.
    const std::size_t bad = s.below(d, trial, 2, 0);
    const std::size_t n_bad = trial % 4 == 0 ? d : 1;
    for (std::size_t j = 0; j < n_bad; ++j) {
      const std::size_t k = (bad + j) % d;
      const double sign = (s.bits(trial, 3, j) & 1) ? 1.0 : -1.0;
      x[k] = b[k] + sign * (1.285 + 1e-9 + 100.0 * s.uniform(trial, 4, j));
    }
    DecodeResult r;
    const std::vector<double> y = round_trip(quantizer, x, b, &r);
    ASSERT_FALSE(r.ok) << trial;
    ASSERT_GT(std::fabs(y[bad] - x[bad]), eps / 2);  // it really was wrong
  }
}

// Between (q-1) eps/2 and (q+1) eps/2 whether a coordinate decodes depends on
// where x falls in its cell, so "correct iff |x - b| < q eps/2" holds only up to
// eps/2. Whatever happens there, a decode reported ok is within eps/2.
TEST(Lattice, BoundaryBandIsDecodedOrDetected) {
  const Quantizer quantizer(lattice(256, 1.0));
  DecodeResult r;
  // |x - b| = 127.9 < q eps / 2 = 128, but x's lattice point 128 is 128.1 from b:
  // the nearest point = 128 (mod 256) to b is -128. Detected.
  std::vector<double> y = round_trip(quantizer, {127.8}, {-0.1}, &r);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(y[0], -128.0);
  // Same distance the other way round of the cell: decodes.
  y = round_trip(quantizer, {127.8}, {-0.1 + 0.2}, &r);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(y[0], 128.0);

  const Stream s(16, StreamId::test);
  int decoded = 0, detected = 0;
  for (std::uint64_t trial = 0; trial < 4000; ++trial) {
    const double b = 10 * s.normal(trial, 0, 0);
    const double sign = (s.bits(trial, 1, 0) & 1) ? 1.0 : -1.0;
    const double x = b + sign * (127.5 + s.uniform(trial, 2, 0));  // in [(q-1)/2, (q+1)/2)
    y = round_trip(quantizer, {x}, {b}, &r);
    if (r.ok) {
      ++decoded;
      ASSERT_LE(std::fabs(y[0] - x), 0.5 + 1e-12) << trial;
    } else {
      ++detected;
      ASSERT_GT(std::fabs(y[0] - x), 0.5) << trial;
    }
  }
  EXPECT_GT(decoded, 1000);
  EXPECT_GT(detected, 1000);
}

TEST(Lattice, UnencodableValuesFailTheDecode) {
  const Quantizer quantizer(lattice(256, 0.01));
  const std::vector<double> b(4, 0.0);
  for (double bad : {kNaN, kInf, -kInf, 1e300, 0x1.0p53 * 0.01}) {
    DecodeResult r;
    round_trip(quantizer, {0.0, bad, 0.5, 1.0}, b, &r);
    EXPECT_FALSE(r.ok) << bad;
  }
  // A non-finite reference cannot decode (unless by luck the index is the residue).
  DecodeResult r;
  round_trip(quantizer, {0.0, 1000.0}, {0.0, kNaN}, &r);
  EXPECT_FALSE(r.ok);
}

}  // namespace
}  // namespace avb
