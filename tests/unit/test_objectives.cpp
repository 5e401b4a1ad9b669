// The objectives layer of sgd_bench: gradients against finite differences,
// stochastic gradients against the full ones, keyed reproducibility, label skew and
// splits, the optimum against closed forms and an independent solver, and the
// LIBSVM reader on good and malformed files.
#include <gtest/gtest.h>

#include "test_support.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

#include <Eigen/Eigenvalues>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/libsvm.hpp"
#include "sgd/objective.hpp"
#include "sgd/optimum.hpp"

namespace avb {
namespace {

using test::config_error;
using test::starts_with;

// A file under the temporary directory, removed when the test ends.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content)
      : path_((std::filesystem::temp_directory_path() / ("avb_objectives_" + std::to_string(::getpid()) + "_" + name))
                  .string()) {
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Coordinates N(0, scale^2) from the test stream: "random points" that stay put.
Eigen::VectorXd stream_point(int d, std::uint64_t which, double scale = 1.0) {
  const Stream stream(99, StreamId::test);
  Eigen::VectorXd x(d);
  for (int k = 0; k < d; ++k) x[k] = scale * stream.normal(which, 0, static_cast<std::uint64_t>(k));
  return x;
}

Eigen::VectorXd gradient_of(const Objective& f, const Eigen::VectorXd& x) {
  Eigen::VectorXd g(f.dim());
  f.gradient(x, g);
  return g;
}

Eigen::VectorXd stochastic_gradient_of(const Objective& f, const Eigen::VectorXd& x, int batch, std::uint64_t seed,
                                       std::uint64_t step) {
  Eigen::VectorXd g(f.dim());
  f.stochastic_gradient(x, batch, seed, step, g);
  return g;
}

// Central differences, step scaled to the coordinate; relative 1e-6 in norm.
void expect_gradient_matches_finite_differences(const Objective& f, const Eigen::VectorXd& x) {
  const Eigen::VectorXd g = gradient_of(f, x);
  Eigen::VectorXd numeric(f.dim());
  for (int k = 0; k < f.dim(); ++k) {
    const double h = 1e-5 * std::max(1.0, std::abs(x[k]));
    Eigen::VectorXd up = x, down = x;
    up[k] += h;
    down[k] -= h;
    numeric[k] = (f.loss(up) - f.loss(down)) / (up[k] - down[k]);
  }
  ASSERT_GT(g.norm(), 1e-3) << "a point too close to the optimum tests nothing";
  EXPECT_LE((numeric - g).norm(), 1e-6 * g.norm())
      << "analytic " << g.transpose() << "\nnumeric  " << numeric.transpose();
}

// Mean of K stochastic gradients against the full gradient, coordinate by
// coordinate, within 5 standard errors of the sample; returns the sample variances.
Eigen::VectorXd expect_unbiased(const Objective& f, const Eigen::VectorXd& x, int batch, int draws) {
  const Eigen::VectorXd g = gradient_of(f, x);
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(f.dim()), sum_sq = Eigen::VectorXd::Zero(f.dim());
  for (int step = 0; step < draws; ++step) {
    const Eigen::VectorXd s = stochastic_gradient_of(f, x, batch, 5, static_cast<std::uint64_t>(step));
    sum += s;
    sum_sq += s.cwiseProduct(s);
  }
  const Eigen::VectorXd mean = sum / draws;
  const Eigen::VectorXd variance = (sum_sq / draws - mean.cwiseProduct(mean)) * draws / (draws - 1.0);
  for (int k = 0; k < f.dim(); ++k) {
    const double standard_error = std::sqrt(variance[k] / draws);
    EXPECT_GT(standard_error, 0.0) << "coordinate " << k << " has no noise: nothing was sampled";
    EXPECT_LE(std::abs(mean[k] - g[k]), 5.0 * standard_error)
        << "coordinate " << k << ": mean " << mean[k] << ", full gradient " << g[k];
  }
  return variance;
}

bool same_bits(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

ObjectiveOptions quadratic_options(QuadraticPreset preset, int d, double zeta, double sigma) {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::quadratic;
  o.preset = preset;
  o.dim = d;
  o.heterogeneity = zeta;
  o.gradient_noise = sigma;
  o.condition = 50.0;
  return o;
}

ObjectiveOptions synthetic_options(int d, int samples_per_peer, double skew, double separation = 1.5) {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::logistic;
  o.dim = d;
  std::tie(o.samples_per_peer, o.label_skew, o.separation) = std::tuple(samples_per_peer, skew, separation);
  return o;
}

// A LIBSVM text of m samples in dimension d from the test stream, some features
// left out (sparse), labels 1/0 and +1/-1 mixed.
std::string libsvm_text(int m, int d, std::uint64_t which) {
  const Stream stream(which, StreamId::test);
  std::string text = "# generated for test_objectives\n";
  for (int s = 0; s < m; ++s) {
    const bool positive = stream.uniform(1, static_cast<std::uint64_t>(s), 0) < 0.4;
    text += positive ? (s % 2 ? "+1" : "1") : (s % 2 ? "-1" : "0");
    for (int k = 0; k < d; ++k) {
      if (stream.uniform(2, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(k)) < 0.3) continue;
      const double value =
          stream.normal(3, static_cast<std::uint64_t>(s), static_cast<std::uint64_t>(k)) + (positive ? 0.7 : -0.7);
      text += " " + std::to_string(k + 1) + ":" + std::to_string(value);
    }
    text += "\n";
  }
  return text;
}

ObjectiveOptions libsvm_options(const std::string& path, DataSplit split) {
  ObjectiveOptions o;
  o.kind = ObjectiveKind::logistic;
  o.data_path = path;
  o.split = split;
  return o;
}

// ---- options ----------------------------------------------------------------------

TEST(ObjectiveOptions, NamesParseBackAndBadNamesNameTheFlag) {
  for (auto kind : {ObjectiveKind::quadratic, ObjectiveKind::logistic})
    EXPECT_EQ(parse_objective_kind(to_string(kind)), kind);
  for (auto preset : {QuadraticPreset::epfl, QuadraticPreset::conditioned})
    EXPECT_EQ(parse_quadratic_preset(to_string(preset)), preset);
  for (auto split : {DataSplit::random, DataSplit::sorted}) EXPECT_EQ(parse_data_split(to_string(split)), split);
  EXPECT_TRUE(starts_with(config_error([] { parse_objective_kind("lasso"); }), "--objective: 'lasso' is not one of"));
  EXPECT_TRUE(starts_with(config_error([] { parse_quadratic_preset("x"); }), "--preset: 'x' is not one of"));
  EXPECT_TRUE(starts_with(config_error([] { parse_data_split("label"); }), "--split: 'label' is not one of"));
}

TEST(ObjectiveOptions, ResolveRejectsBadValuesNamingTheFlag) {
  struct Case {
    std::function<void(ObjectiveOptions&)> change;
    std::string prefix;
  };
  const ObjectiveOptions quadratic = quadratic_options(QuadraticPreset::conditioned, 4, 1.0, 0.0);
  const ObjectiveOptions synthetic = synthetic_options(4, 10, 0.0);
  const std::vector<std::pair<ObjectiveOptions, Case>> cases = {
      {quadratic, {[](auto& o) { o.dim = 0; }, "--dim: 0 "}},
      {quadratic, {[](auto& o) { o.heterogeneity = -1; }, "--zeta: -1 "}},
      {quadratic, {[](auto& o) { o.gradient_noise = NAN; }, "--sigma: nan "}},
      {quadratic, {[](auto& o) { o.condition = 0.5; }, "--condition: 0.5 "}},
      {quadratic, {[](auto& o) { o.dim = 1; }, "--condition: 50 needs --dim >= 2"}},
      {synthetic, {[](auto& o) { o.samples_per_peer = 0; }, "--samples-per-peer: 0 "}},
      {synthetic, {[](auto& o) { o.separation = -0.1; }, "--separation: -0.1 "}},
      {synthetic, {[](auto& o) { o.label_skew = 1.5; }, "--label-skew: 1.5 "}},
      {synthetic, {[](auto& o) { o.dim = -2; }, "--dim: -2 "}},
      {libsvm_options("f", DataSplit::random), {[](auto& o) { o.data_dim = -1; }, "--data-dim: -1 "}},
  };
  for (const auto& entry : cases) {
    const ObjectiveOptions& base = entry.first;  // named: clang before 16 cannot capture a binding
    const auto& c = entry.second;
    EXPECT_EQ(config_error([&] { resolve(base, 4); }), "") << "the base of " << c.prefix << " is valid";
    ObjectiveOptions bad = base;
    c.change(bad);
    const std::string message = config_error([&] { resolve(bad, 4); });
    EXPECT_TRUE(starts_with(message, c.prefix)) << "'" << message << "' does not start with '" << c.prefix << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  // The epfl preset ignores --condition; dim 1 is fine there.
  ObjectiveOptions epfl = quadratic_options(QuadraticPreset::epfl, 1, 1.0, 0.0);
  epfl.condition = 0.0;
  EXPECT_EQ(config_error([&] { resolve(epfl, 3); }), "");
}

TEST(ObjectiveOptions, DescribeListsWhatTheKindUses) {
  auto keys = [](const ObjectiveOptions& o) {
    std::set<std::string> out;
    for (const auto& [key, value] : describe(o)) out.insert(key);
    return out;
  };
  const auto quadratic = keys(quadratic_options(QuadraticPreset::conditioned, 3, 1.0, 0.5));
  EXPECT_TRUE(quadratic.count("zeta") && quadratic.count("sigma") && quadratic.count("condition"));
  EXPECT_FALSE(quadratic.count("label-skew"));
  const auto synthetic = keys(synthetic_options(3, 10, 0.5));
  EXPECT_TRUE(synthetic.count("label-skew") && synthetic.count("samples-per-peer"));
  EXPECT_FALSE(synthetic.count("zeta") || synthetic.count("split"));
  const auto file = keys(libsvm_options("a9a", DataSplit::sorted));
  EXPECT_TRUE(file.count("split") && file.count("data"));
  EXPECT_FALSE(file.count("label-skew"));
  for (const auto& [key, value] : describe(quadratic_options(QuadraticPreset::epfl, 3, 0.25, 0.0)))
    if (key == "zeta") {
      EXPECT_EQ(value, "0.25");
    }
}

// ---- numerics ---------------------------------------------------------------------

TEST(ObjectiveMath, LogisticFunctionsAreStable) {
  for (double z = -30.0; z <= 30.0; z += 0.37) {
    EXPECT_NEAR(log1p_exp(z), std::log(1.0 + std::exp(z)), 1e-14 * std::max(1.0, std::abs(z)));
    EXPECT_NEAR(sigmoid(z), 1.0 / (1.0 + std::exp(-z)), 1e-15);
    EXPECT_NEAR(sigmoid(z) + sigmoid(-z), 1.0, 1e-15);
  }
  EXPECT_EQ(log1p_exp(1000.0), 1000.0);                 // naive: inf
  EXPECT_EQ(log1p_exp(-1000.0), 0.0);                   // exp(-1000) underflows; no NaN
  EXPECT_DOUBLE_EQ(log1p_exp(-40.0), std::exp(-40.0));  // naive: log(1) = 0
  EXPECT_DOUBLE_EQ(log1p_exp(40.0), 40.0 + std::exp(-40.0));
  EXPECT_EQ(sigmoid(1000.0), 1.0);
  EXPECT_EQ(sigmoid(-1000.0), 0.0);  // naive: 1/(1+inf) = 0 too, but e/(1+e) must not be NaN
  EXPECT_DOUBLE_EQ(sigmoid(-40.0), std::exp(-40.0) / (1.0 + std::exp(-40.0)));
}

// ---- gradients --------------------------------------------------------------------

TEST(ObjectiveQuadratic, GradientMatchesFiniteDifferences) {
  const int n = 5;
  for (auto preset : {QuadraticPreset::epfl, QuadraticPreset::conditioned})
    for (int peer : {0, 3, pooled}) {
      const QuadraticObjective f(quadratic_options(preset, 7, 2.0, 0.0), peer, n, 11);
      for (std::uint64_t which = 0; which < 3; ++which) {
        SCOPED_TRACE(std::string(to_string(preset)) + " peer " + std::to_string(peer) + " point " +
                     std::to_string(which));
        expect_gradient_matches_finite_differences(f, stream_point(f.dim(), which, 2.0));
      }
    }
}

TEST(ObjectiveLogistic, GradientMatchesFiniteDifferences) {
  const int n = 4;
  for (int peer : {0, 3, pooled}) {
    const LogisticObjective f(synthetic_options(6, 30, 0.5), peer, n, 12);
    for (std::uint64_t which = 0; which < 3; ++which) {
      SCOPED_TRACE("synthetic peer " + std::to_string(peer) + " point " + std::to_string(which));
      expect_gradient_matches_finite_differences(f, stream_point(f.dim(), 10 + which));
    }
  }
  const TempFile file("fd.svm", libsvm_text(37, 5, 3));
  for (int peer : {1, pooled}) {
    const LogisticObjective f(libsvm_options(file.path(), DataSplit::random), peer, 3, 12);
    SCOPED_TRACE("libsvm peer " + std::to_string(peer));
    expect_gradient_matches_finite_differences(f, stream_point(f.dim(), 20));
  }
}

// ---- stochastic gradients -----------------------------------------------------------

TEST(ObjectiveQuadratic, StochasticGradientIsUnbiasedWithTheStatedVariance) {
  const int d = 8, batch = 4;
  const double sigma = 2.0;
  const QuadraticObjective f(quadratic_options(QuadraticPreset::epfl, d, 1.0, sigma), 2, 4, 21);
  const Eigen::VectorXd x = stream_point(d, 30);
  const int draws = 4000;
  const Eigen::VectorXd variance = expect_unbiased(f, x, batch, draws);
  // Sample variances of K Gaussian draws have relative standard error sqrt(2/K) = 2.2%.
  for (int k = 0; k < d; ++k) EXPECT_NEAR(variance[k], sigma * sigma / (d * batch), 0.1 * sigma * sigma / (d * batch));

  const QuadraticObjective exact(quadratic_options(QuadraticPreset::epfl, d, 1.0, 0.0), 2, 4, 21);
  EXPECT_TRUE(same_bits(stochastic_gradient_of(exact, x, batch, 5, 17), gradient_of(exact, x)))
      << "sigma = 0 must give the full gradient";
}

TEST(ObjectiveLogistic, StochasticGradientIsUnbiased) {
  const LogisticObjective f(synthetic_options(5, 40, 0.5), 1, 4, 22);
  expect_unbiased(f, stream_point(5, 31), 3, 20000);
}

TEST(ObjectiveLogistic, StochasticGradientIsUnbiasedForUnequalWeights) {
  // The pooled objective of unequal shards weighs samples unequally; uniform
  // sampling stays unbiased only with the m w_s scaling.
  Dataset data;
  data.features.resize(4, 3);
  data.features << 1.0, 0.5, -1.0,  //
      -0.3, 2.0, 0.1,               //
      0.7, -0.2, 1.5,               //
      -1.2, -0.8, 0.4;
  data.labels.resize(4);
  data.labels << 1, -1, 1, -1;
  Eigen::VectorXd weights(4);
  weights << 0.5, 0.05, 0.05, 0.4;
  const LogisticObjective f(data, weights, 0.1, 3);
  expect_unbiased(f, stream_point(3, 32), 2, 40000);
}

// ---- keyed reproducibility ------------------------------------------------------------

TEST(ObjectiveKeyed, SameSeedGivesTheSameBitsInAnyOrder) {
  const auto quadratic = quadratic_options(QuadraticPreset::epfl, 6, 1.0, 0.7);
  const auto synthetic = synthetic_options(6, 25, 0.3);
  for (const auto& options : {quadratic, synthetic}) {
    const auto a = make_objective(options, 2, 5, 77);
    const auto b = make_objective(options, 2, 5, 77);
    const Eigen::VectorXd x = stream_point(6, 40);
    EXPECT_EQ(a->loss(x), b->loss(x));
    EXPECT_TRUE(same_bits(gradient_of(*a, x), gradient_of(*b, x)));
    // Step 9 then step 3 on one object, 3 then 9 on the other: no hidden state.
    const Eigen::VectorXd a9 = stochastic_gradient_of(*a, x, 4, 8, 9), a3 = stochastic_gradient_of(*a, x, 4, 8, 3);
    const Eigen::VectorXd b3 = stochastic_gradient_of(*b, x, 4, 8, 3), b9 = stochastic_gradient_of(*b, x, 4, 8, 9);
    EXPECT_TRUE(same_bits(a9, b9));
    EXPECT_TRUE(same_bits(a3, b3));
    EXPECT_FALSE(same_bits(a3, a9)) << "different steps must draw differently";
    EXPECT_FALSE(same_bits(a3, stochastic_gradient_of(*a, x, 4, 9, 3))) << "the seed must key the draws";
  }
}

TEST(ObjectiveKeyed, PeersAndSeedsGetDifferentData) {
  const auto quadratic = quadratic_options(QuadraticPreset::conditioned, 6, 1.0, 0.7);
  const QuadraticObjective q0(quadratic, 0, 4, 5), q1(quadratic, 1, 4, 5), q0_other(quadratic, 0, 4, 6);
  // b_i = (zeta / i) * N(0, I): unscale before comparing, so only the draws differ.
  EXPECT_FALSE((q0.targets() - 2.0 * q1.targets()).isZero(1e-12));
  EXPECT_FALSE((q0.targets() - q0_other.targets()).isZero(1e-12));
  const Eigen::VectorXd x = stream_point(6, 41);
  const Eigen::VectorXd noise0 = stochastic_gradient_of(q0, x, 1, 3, 4) - gradient_of(q0, x);
  const Eigen::VectorXd noise1 = stochastic_gradient_of(q1, x, 1, 3, 4) - gradient_of(q1, x);
  EXPECT_FALSE(noise0.isApprox(noise1)) << "peers must not share gradient noise";

  const auto synthetic = synthetic_options(6, 25, 0.0);
  const Dataset s0 = synthetic_shard(synthetic, 0, 4, 5), s2 = synthetic_shard(synthetic, 2, 4, 5);
  EXPECT_EQ(s0.labels, s2.labels);  // same majority label, skew 0: same label pattern
  EXPECT_FALSE(s0.features.isApprox(s2.features));
  EXPECT_FALSE(s0.features.isApprox(synthetic_shard(synthetic, 0, 4, 6).features));
  // A peer's shard does not depend on how many peers there are.
  EXPECT_EQ(s2.features, synthetic_shard(synthetic, 2, 9, 5).features);
}

TEST(ObjectiveKeyed, PooledHoldsEveryPeersData) {
  const auto synthetic = synthetic_options(4, 7, 0.6);
  const LogisticObjective all(synthetic, pooled, 3, 8);
  ASSERT_EQ(all.samples().samples(), 21);
  for (int i = 0; i < 3; ++i) {
    const LogisticObjective peer(synthetic, i, 3, 8);
    EXPECT_EQ(all.samples().features.middleRows(7 * i, 7), peer.samples().features);
    EXPECT_EQ(all.samples().labels.segment(7 * i, 7), peer.samples().labels);
    EXPECT_EQ(peer.counter_peer(), static_cast<std::uint64_t>(i));
  }
  EXPECT_EQ(all.counter_peer(), 3u);
  EXPECT_DOUBLE_EQ(all.l2(), 1.0 / 21);
}

// ---- heterogeneity ----------------------------------------------------------------------

TEST(ObjectiveLogistic, LabelSkewSetsTheShareOfTheMajorityLabel) {
  auto count_majority = [](const Dataset& shard, int peer) {
    const double majority = peer % 2 == 0 ? 1.0 : -1.0;
    return static_cast<int>((shard.labels.array() == majority).count());
  };
  for (int peer = 0; peer < 6; ++peer) {
    const Dataset one_label = synthetic_shard(synthetic_options(3, 25, 1.0), peer, 6, 4);
    EXPECT_EQ(count_majority(one_label, peer), 25) << "skew 1: peer " << peer << " must hold one label";
    EXPECT_EQ(count_majority(synthetic_shard(synthetic_options(3, 24, 0.0), peer, 6, 4), peer), 12);
    EXPECT_EQ(count_majority(synthetic_shard(synthetic_options(3, 40, 0.5), peer, 6, 4), peer), 30);
  }
  // The classes sit at +-separation along one direction: the class means differ by
  // about 2 * separation in norm.
  const Dataset shard = synthetic_shard(synthetic_options(3, 4000, 0.0, 2.0), 0, 1, 4);
  Eigen::RowVectorXd positive = Eigen::RowVectorXd::Zero(3), negative = Eigen::RowVectorXd::Zero(3);
  for (int s = 0; s < shard.samples(); ++s) (shard.labels[s] > 0 ? positive : negative) += shard.features.row(s);
  EXPECT_NEAR((positive - negative).norm() / 2000.0, 4.0, 0.15);
}

TEST(ObjectivePooled, IsTheMeanOfThePeers) {
  const TempFile file("pooled.svm", libsvm_text(10, 4, 5));  // 10 samples on 3 peers: shards 3, 3, 4
  struct Setup {
    std::string name;
    ObjectiveOptions options;
    int n;
  };
  const std::vector<Setup> setups = {
      {"epfl", quadratic_options(QuadraticPreset::epfl, 4, 1.5, 0.0), 5},
      {"conditioned", quadratic_options(QuadraticPreset::conditioned, 4, 1.5, 0.0), 5},
      {"synthetic", synthetic_options(4, 9, 0.4), 5},
      {"libsvm random", libsvm_options(file.path(), DataSplit::random), 3},
      {"libsvm sorted", libsvm_options(file.path(), DataSplit::sorted), 3},
  };
  for (const auto& setup : setups) {
    SCOPED_TRACE(setup.name);
    const auto all = make_objective(setup.options, pooled, setup.n, 31);
    const Eigen::VectorXd x = stream_point(all->dim(), 50);
    double mean_loss = 0.0;
    Eigen::VectorXd mean_gradient = Eigen::VectorXd::Zero(all->dim());
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(all->dim());
    for (int i = 0; i < setup.n; ++i) {
      const auto peer = make_objective(setup.options, i, setup.n, 31);
      // Each f_i is a mean over its own samples: log 2 at x = 0, whatever the shard size.
      if (setup.options.kind == ObjectiveKind::logistic) {
        EXPECT_NEAR(peer->loss(zero), std::log(2.0), 1e-15);
      }
      mean_loss += peer->loss(x) / setup.n;
      mean_gradient += gradient_of(*peer, x) / setup.n;
    }
    EXPECT_NEAR(all->loss(x), mean_loss, 1e-12 * std::abs(mean_loss));
    EXPECT_LE((gradient_of(*all, x) - mean_gradient).norm(), 1e-12 * mean_gradient.norm());
  }
}

// ---- optimum ----------------------------------------------------------------------

TEST(OptimumQuadratic, EpflPresetMatchesTheClosedForm) {
  const int n = 6, d = 5;
  const double zeta = 2.0;
  const auto options = quadratic_options(QuadraticPreset::epfl, d, zeta, 0.0);
  const QuadraticObjective all(options, pooled, n, 41);
  const Optimum optimum = quadratic_optimum(all);
  EXPECT_TRUE(optimum.converged);
  EXPECT_LE(optimum.gradient_norm, 1e-10);
  EXPECT_EQ(optimum.iterations, 0);

  // x* = (sum_i i^2 / n)^-1 sum_i (i / sqrt n) b_i, i 1-based, b_i from each peer.
  double curvature = 0.0;
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(d);
  for (int peer = 0; peer < n; ++peer) {
    const QuadraticObjective f(options, peer, n, 41);
    const double i = peer + 1.0;
    EXPECT_TRUE(f.diagonals().isConstant(i / std::sqrt(n), 1e-15)) << "A_i = (i / sqrt n) I";
    curvature += i * i / n;
    rhs += i / std::sqrt(n) * f.targets().col(0);
  }
  const Eigen::VectorXd closed_form = rhs / curvature;
  EXPECT_LE((optimum.x - closed_form).norm(), 1e-13 * closed_form.norm());
  EXPECT_DOUBLE_EQ(optimum.loss, all.loss(closed_form));
  // And it is a minimum: nearby points are worse.
  for (std::uint64_t which = 0; which < 5; ++which)
    EXPECT_GT(all.loss(optimum.x + stream_point(d, 60 + which, 1e-3)), optimum.loss);
}

TEST(OptimumQuadratic, EpflTargetsHaveVarianceZetaSquaredOverISquared) {
  const int d = 20000;
  const double zeta = 3.0;
  for (int peer : {0, 2}) {
    const QuadraticObjective f(quadratic_options(QuadraticPreset::epfl, d, zeta, 0.0), peer, 3, 42);
    const Eigen::VectorXd b = f.targets().col(0);
    const double i = peer + 1.0, expected = zeta * zeta / (i * i);
    EXPECT_NEAR(b.mean(), 0.0, 5.0 * std::sqrt(expected / d));
    EXPECT_NEAR(b.squaredNorm() / d, expected, 0.05 * expected);  // relative SE 1%
  }
}

TEST(OptimumQuadratic, ConditionedPresetHasTheRequestedCondition) {
  auto options = quadratic_options(QuadraticPreset::conditioned, 6, 1.0, 0.0);
  options.condition = 1000.0;
  const QuadraticObjective all(options, pooled, 4, 43);
  const Eigen::VectorXd eigenvalues = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(all.normal_matrix()).eigenvalues();
  EXPECT_NEAR(eigenvalues.maxCoeff() / eigenvalues.minCoeff(), 1000.0, 1e-9);
  EXPECT_NEAR(all.diagonals().minCoeff(), 1.0, 1e-15);
  EXPECT_NEAR(all.diagonals().maxCoeff(), std::sqrt(1000.0), 1e-12);
  const Optimum optimum = find_optimum(all);
  EXPECT_TRUE(optimum.converged);
  EXPECT_LE(optimum.gradient_norm, 1e-10);
  EXPECT_LE(gradient_of(all, optimum.x).norm(), 1e-10);
}

// Plain gradient descent on the same data, written out here without the library's
// loss, gradient or Newton step: step 1/L with L = l2 + lambda_max(sum w a a^T) / 4.
struct DescentResult {
  Eigen::VectorXd x;
  double loss = 0.0;
  double gradient_norm = 0.0;
  int iterations = 0;
};

DescentResult gradient_descent(const LogisticObjective& f) {
  const auto& a = f.samples().features;
  const auto& y = f.samples().labels;
  const auto& w = f.weights();
  const double l2 = f.l2();
  auto loss = [&](const Eigen::VectorXd& x) {
    double sum = 0.0;
    for (int s = 0; s < a.rows(); ++s) sum += w[s] * std::log(1.0 + std::exp(-y[s] * a.row(s).dot(x)));
    return sum + 0.5 * l2 * x.squaredNorm();
  };
  auto gradient = [&](const Eigen::VectorXd& x) {
    Eigen::VectorXd g = l2 * x;
    for (int s = 0; s < a.rows(); ++s) {
      const double margin = y[s] * a.row(s).dot(x);
      g -= w[s] * y[s] / (1.0 + std::exp(margin)) * a.row(s).transpose();
    }
    return g;
  };
  Eigen::MatrixXd second_moment = Eigen::MatrixXd::Zero(a.cols(), a.cols());
  for (int s = 0; s < a.rows(); ++s) second_moment += w[s] * a.row(s).transpose() * a.row(s);
  const double lipschitz =
      l2 + 0.25 * Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(second_moment).eigenvalues().maxCoeff();

  DescentResult out;
  out.x = Eigen::VectorXd::Zero(a.cols());
  Eigen::VectorXd g = gradient(out.x);
  while (g.norm() > 1e-11 && out.iterations < 1000000) {
    out.x -= g / lipschitz;
    g = gradient(out.x);
    ++out.iterations;
  }
  out.loss = loss(out.x);
  out.gradient_norm = g.norm();
  return out;
}

void expect_newton_matches_descent(const LogisticObjective& f) {
  const Optimum newton = logistic_optimum(f);
  EXPECT_TRUE(newton.converged);
  EXPECT_LE(newton.gradient_norm, 1e-10);
  EXPECT_LE(gradient_of(f, newton.x).norm(), 1e-10);
  EXPECT_GE(newton.iterations, 2);
  EXPECT_LE(newton.iterations, 30);
  const DescentResult descent = gradient_descent(f);
  ASSERT_LE(descent.gradient_norm, 1e-11) << "gradient descent did not converge in " << descent.iterations;
  EXPECT_NEAR(newton.loss, descent.loss, 1e-8);
  EXPECT_LE((newton.x - descent.x).norm(), 1e-8 * std::max(1.0, descent.x.norm()));
  ::testing::Test::RecordProperty("newton_iterations", newton.iterations);
  ::testing::Test::RecordProperty("descent_iterations", descent.iterations);
}

TEST(OptimumLogistic, NewtonMatchesGradientDescentOnSyntheticData) {
  const LogisticObjective all(synthetic_options(5, 50, 0.5), pooled, 4, 44);
  expect_newton_matches_descent(all);
}

// The stopping rules are relative: a large --zeta or --condition scales the
// gradient's rounding with it (an absolute 1e-10 refused both: sgd_bench aborted).
TEST(OptimumQuadratic, ConvergesAtAnyScale) {
  for (double zeta : {1e-12, 1.0, 1e6, 1e12}) {
    const QuadraticObjective all(quadratic_options(QuadraticPreset::epfl, 10, zeta, 0.0), pooled, 16, 7);
    const Optimum optimum = quadratic_optimum(all);
    EXPECT_TRUE(optimum.converged) << "zeta " << zeta << ": gradient " << optimum.gradient_norm << ", scale "
                                   << optimum.gradient_scale;
    EXPECT_LE(optimum.gradient_norm, kOptimumTolerance * optimum.gradient_scale);
  }
  for (double condition : {1e8, 1e16}) {
    ObjectiveOptions o = quadratic_options(QuadraticPreset::conditioned, 10, 1.0, 0.0);
    o.condition = condition;
    const Optimum optimum = quadratic_optimum(QuadraticObjective(o, pooled, 16, 7));
    EXPECT_TRUE(optimum.converged) << "condition " << condition << ": gradient " << optimum.gradient_norm;
  }
  // A wrong x* is still caught, at any scale: the rule is relative, not lax.
  for (double zeta : {1e-12, 1e6}) {
    const QuadraticObjective all(quadratic_options(QuadraticPreset::epfl, 10, zeta, 0.0), pooled, 16, 7);
    Eigen::VectorXd x = quadratic_optimum(all).x, g(10);
    x *= 1.0 + 1e-6;
    all.gradient(x, g);
    EXPECT_GT(g.norm(), kOptimumTolerance * gradient_scale(all, x)) << "zeta " << zeta;
  }
}

TEST(OptimumQuadratic, OverflowIsNotConvergence) {
  const QuadraticObjective all(quadratic_options(QuadraticPreset::epfl, 4, 1e300, 0.0), pooled, 16, 7);
  const Optimum optimum = quadratic_optimum(all);
  EXPECT_FALSE(optimum.converged) << "loss " << optimum.loss << ", gradient " << optimum.gradient_norm;
}

TEST(OptimumLogistic, NewtonMatchesGradientDescentOnAnUnevenLibsvmSplit) {
  const TempFile file("optimum.svm", libsvm_text(43, 6, 7));  // 43 samples on 4 peers
  const LogisticObjective all(libsvm_options(file.path(), DataSplit::sorted), pooled, 4, 45);
  expect_newton_matches_descent(all);
}

TEST(OptimumLogistic, ReportsWhenItRunsOutOfIterations) {
  const LogisticObjective all(synthetic_options(5, 50, 0.5), pooled, 4, 44);
  const Optimum cut = logistic_optimum(all, 1e-10, 1);
  EXPECT_FALSE(cut.converged);
  EXPECT_EQ(cut.iterations, 1);
  EXPECT_GT(cut.gradient_norm, 1e-10);
  EXPECT_LT(cut.loss, all.loss(Eigen::VectorXd::Zero(5))) << "one Newton step must still descend";
}

// ---- LIBSVM -------------------------------------------------------------------------

TEST(LibsvmRead, ParsesAGoodFile) {
  const TempFile file("good.svm",
                      "# a comment line\n"
                      "+1 1:0.5 3:-2\n"
                      "-1 2:1e-3 4:7   # a trailing comment\n"
                      "\n"
                      "   \t\n"
                      "0 1:1\r\n"
                      "1.0\t2:+4 3:0\n"
                      "2\n");
  const Dataset data = read_libsvm(file.path());
  ASSERT_EQ(data.samples(), 5);
  ASSERT_EQ(data.dim(), 4);
  Eigen::VectorXd labels(5);
  labels << 1, -1, -1, 1, 1;
  EXPECT_EQ(data.labels, labels);
  SampleMatrix features(5, 4);
  features << 0.5, 0, -2, 0,  //
      0, 1e-3, 0, 7,          //
      1, 0, 0, 0,             //
      0, 4, 0, 0,             //
      0, 0, 0, 0;
  EXPECT_EQ(data.features, features);
  // A given dimension pads with zero features.
  const Dataset wide = read_libsvm(file.path(), 6);
  EXPECT_EQ(wide.dim(), 6);
  EXPECT_EQ(wide.features.leftCols(4), features);
  EXPECT_TRUE(wide.features.rightCols(2).isZero(0.0));
  // The resource estimate's shape is the read's.
  for (const int dim : {0, 6}) {
    const LibsvmShape shape = read_libsvm_shape(file.path(), dim);
    EXPECT_EQ(shape.samples, 5);
    EXPECT_EQ(shape.dim, dim == 0 ? 4 : 6);
  }
}

TEST(LibsvmRead, RejectsMalformedLinesNamingTheLine) {
  struct Case {
    std::string line;
    int dim;
    std::string what;  // the message after "--data PATH: line 2: "
  };
  // Grouped by the message, which quotes the offending word (the last of the line)
  // or its index.
  const auto last_word = [](const std::string& line) { return line.substr(line.rfind(' ') + 1); };
  const auto index_of = [&](const std::string& line) {
    const std::string word = last_word(line);
    return word.substr(0, word.find(':'));
  };
  std::vector<Case> cases = {{"+1 4:1", 3, "index 4 exceeds the given dimension 3"}};
  for (const std::string label : {"x", "+-1", "nan"})
    cases.push_back({label + " 1:2", 0, "label '" + label + "' is not a number"});
  for (const std::string line : {"+1 1:2 abc", "+1 1:", "+1 a:1", "+1 1:inf", "+1 1.5:1"})
    cases.push_back({line, 0, "'" + last_word(line) + "' is not idx:val"});
  for (const std::string line : {"+1 0:1", "+1 -3:1"})
    cases.push_back({line, 0, "index " + index_of(line) + " is below 1"});
  for (const std::string line : {"+1 3:1 2:1", "+1 3:1 3:2"})
    cases.push_back({line, 0, "index " + index_of(line) + " does not increase"});
  for (const auto& c : cases) {
    const TempFile file("bad.svm", "+1 1:1\n" + c.line + "\n-1 2:1\n");
    const std::string message = config_error([&] { read_libsvm(file.path(), c.dim); });
    const std::string prefix = "--data " + file.path() + ": line 2: " + c.what;
    EXPECT_TRUE(starts_with(message, prefix)) << "'" << message << "'\ndoes not start with\n'" << prefix << "'";
    EXPECT_EQ(message.find('\n'), std::string::npos);
    // The estimate refuses the file as the run would, before it.
    EXPECT_EQ(config_error([&] { read_libsvm_shape(file.path(), c.dim); }), message);
  }
}

// An index may reach 2^30, so before this bound one line such as "1 1073741824:1"
// asked for an 8 GiB dense matrix (found while writing the fuzzer, tests/fuzz).
TEST(LibsvmRead, RefusesDenseMatricesAboveTheBound) {
  std::istringstream huge("+1 1073741824:1\n");
  EXPECT_EQ(config_error([&] { read_libsvm(huge, "big.svm"); }),
            "--data big.svm: 1 samples x 1073741824 features is too large for dense storage (at most 134217728 "
            "values, 1 GiB; is an index wrong?)");
  std::istringstream wide("+1 1:1\n-1 2:1\n");
  EXPECT_TRUE(starts_with(config_error([&] { read_libsvm(wide, "wide.svm", 1 << 27); }),
                          "--data wide.svm: 2 samples x 134217728 features is too large"));
  const TempFile file("big.svm", "+1 1073741824:1\n");
  EXPECT_EQ(config_error([&] { read_libsvm_shape(file.path()); }), config_error([&] { read_libsvm(file.path()); }));
}

TEST(LibsvmRead, StreamsCrlfNulsAndEndlessLines) {
  std::istringstream crlf("+1 1:0.5\r\n-1 2:2\r\n");
  const Dataset data = read_libsvm(crlf, "crlf.svm");
  EXPECT_EQ(data.samples(), 2);
  EXPECT_EQ(data.features(1, 1), 2.0);
  std::istringstream nul(std::string("+1 1:1\n-1 2\0:1\n", 15));
  // A NUL is shown escaped: printed with %s, the message would stop at it.
  EXPECT_EQ(config_error([&] { read_libsvm(nul, "nul.svm"); }),
            "--data nul.svm: line 2: '2\\x00:1' is not idx:val (an integer index and a finite number)");
  std::istringstream endless(std::string((1 << 24) + 1, '1'));
  EXPECT_EQ(config_error([&] { read_libsvm(endless, "zero.svm"); }),
            "--data zero.svm: line 1: longer than 16777216 characters (is this a LIBSVM text file?)");
}

// A set-up's stop is polled as a file is read (every 4096 lines, the first among
// them): a large --data file no longer delays a signal by its reading time.
TEST(LibsvmRead, AStopEndsTheReading) {
  std::string lines;
  for (int i = 0; i < 10000; ++i) lines += (i % 2 == 0 ? "+1 1:0.5 3:1\n" : "-1 2:2\n");
  std::atomic<bool> stop{true};
  std::istringstream stopped(lines);
  EXPECT_THROW(read_libsvm(stopped, "big.svm", 0, "--data", &stop), StopRequested);
  stop = false;
  std::istringstream read(lines);
  EXPECT_EQ(read_libsvm(read, "big.svm", 0, "--data", &stop).samples(), 10000);
}

TEST(LibsvmRead, ReportsUnreadableAndEmptyFiles) {
  const std::string missing = "/nonexistent/avb_objectives.svm";
  EXPECT_TRUE(starts_with(config_error([&] { read_libsvm(missing); }), "--data " + missing + ": cannot read the file"));
  const std::string directory = std::filesystem::temp_directory_path().string();
  EXPECT_TRUE(
      starts_with(config_error([&] { read_libsvm(directory); }), "--data " + directory + ": cannot read the file"));
  // The file system would open "a", not the file named.
  EXPECT_EQ(config_error([&] { read_libsvm(std::string("a\0b", 3)); }),
            "--data 'a\\x00b': the path contains a NUL byte");
  const TempFile empty("empty.svm", "# nothing\n\n");
  EXPECT_TRUE(starts_with(config_error([&] { read_libsvm(empty.path()); }), "--data " + empty.path() + ": no samples"));
  for (const std::string& path : {missing, directory, std::string("a\0b", 3), empty.path()})
    EXPECT_EQ(config_error([&] { read_libsvm_shape(path); }), config_error([&] { read_libsvm(path); }));
  // The objective reports the same error when it reads the file itself.
  EXPECT_TRUE(starts_with(config_error([&] { make_objective(libsvm_options(missing, DataSplit::random), 0, 2, 1); }),
                          "--data " + missing + ": cannot read the file"));
}

TEST(LibsvmSplit, SortedSplitGivesPeersContiguousLabels) {
  const TempFile file("sorted.svm", libsvm_text(23, 3, 9));
  const Dataset data = read_libsvm(file.path());
  const int negatives = static_cast<int>((data.labels.array() < 0).count());
  ASSERT_GT(negatives, 3);
  ASSERT_LT(negatives, 20);
  const int n = 5;
  std::vector<double> labels_in_peer_order;
  std::multiset<int> all_rows;
  int mixed_peers = 0;
  for (int peer = 0; peer < n; ++peer) {
    const std::vector<int> rows = shard_rows(data, DataSplit::sorted, peer, n, 3);
    EXPECT_EQ(static_cast<int>(rows.size()), (peer + 1) * 23 / n - peer * 23 / n);
    const LogisticObjective f(libsvm_options(file.path(), DataSplit::sorted), peer, n, 3);
    ASSERT_EQ(f.samples().samples(), static_cast<int>(rows.size()));
    std::set<double> labels;
    for (std::size_t r = 0; r < rows.size(); ++r) {
      all_rows.insert(rows[r]);
      labels_in_peer_order.push_back(data.labels[rows[r]]);
      labels.insert(data.labels[rows[r]]);
      EXPECT_EQ(f.samples().features.row(static_cast<Eigen::Index>(r)), data.features.row(rows[r]));
    }
    mixed_peers += labels.size() > 1;
  }
  EXPECT_TRUE(std::is_sorted(labels_in_peer_order.begin(), labels_in_peer_order.end()))
      << "peers must hold contiguous label ranges, -1 first";
  EXPECT_LE(mixed_peers, 1);
  EXPECT_EQ(all_rows.size(), 23u);
  EXPECT_EQ(std::set<int>(all_rows.begin(), all_rows.end()).size(), 23u) << "every sample exactly once";
}

TEST(LibsvmSplit, RandomSplitIsAKeyedPartition) {
  const TempFile file("random.svm", libsvm_text(50, 3, 10));
  const Dataset data = read_libsvm(file.path());
  const int n = 4;
  std::vector<int> all_rows;
  bool differs_from_seed_2 = false;
  for (int peer = 0; peer < n; ++peer) {
    const std::vector<int> rows = shard_rows(data, DataSplit::random, peer, n, 1);
    EXPECT_EQ(rows, shard_rows(data, DataSplit::random, peer, n, 1)) << "same seed, same shard";
    differs_from_seed_2 |= rows != shard_rows(data, DataSplit::random, peer, n, 2);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    all_rows.insert(all_rows.end(), rows.begin(), rows.end());
  }
  EXPECT_TRUE(differs_from_seed_2);
  std::sort(all_rows.begin(), all_rows.end());
  std::vector<int> expected(50);
  for (int r = 0; r < 50; ++r) expected[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(all_rows, expected);
  // Not the identity: the first peer's block is not rows 0..11.
  EXPECT_NE(shard_rows(data, DataSplit::random, 0, n, 1), std::vector<int>(expected.begin(), expected.begin() + 12));

  const std::string message = config_error([&] { shard_rows(data, DataSplit::random, 0, 51, 1, file.path()); });
  EXPECT_TRUE(starts_with(message, "--data " + file.path() + ": 50 samples cannot be split across 51 peers"))
      << message;
}

TEST(LibsvmSplit, RandomSplitDrawsEveryOrderEquallyOften) {
  // Three samples on three peers: who gets which sample is one of 3! orders, each
  // with probability 1/6 over seeds if the shuffle is a proper Fisher-Yates.
  Dataset data;
  data.features = SampleMatrix::Zero(3, 1);
  data.labels = Eigen::VectorXd::Ones(3);
  std::map<std::vector<int>, int> counts;
  const int seeds = 6000;
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<int> order;
    for (int peer = 0; peer < 3; ++peer) order.push_back(shard_rows(data, DataSplit::random, peer, 3, seed)[0]);
    ++counts[order];
  }
  ASSERT_EQ(counts.size(), 6u);
  // Binomial(6000, 1/6): mean 1000, standard deviation 29.
  for (const auto& [order, count] : counts) EXPECT_NEAR(count, 1000, 5 * 29) << order[0] << order[1] << order[2];
}

TEST(LibsvmAccuracy, CountsSignAgreement) {
  Dataset data;
  data.features.resize(4, 2);
  data.features << 1, 0,  //
      0, 1,               //
      -1, 0,              //
      0, -1;
  data.labels.resize(4);
  data.labels << 1, 1, -1, 1;
  EXPECT_DOUBLE_EQ(accuracy(data, Eigen::Vector2d(1.0, 1.0)), 0.75);    // misses the last sample
  EXPECT_DOUBLE_EQ(accuracy(data, Eigen::Vector2d(-1.0, -1.0)), 0.25);  // right on the last sample only
  EXPECT_DOUBLE_EQ(accuracy(data, Eigen::Vector2d(0.0, 0.0)), 0.25);    // sign(0) = -1
  const LogisticObjective f(data, Eigen::VectorXd::Constant(4, 0.25), 0.25, 0);
  EXPECT_DOUBLE_EQ(f.accuracy(Eigen::Vector2d(1.0, 1.0)), 0.75);
}

TEST(ObjectiveFactory, MakesTheChosenKindFromAFileOrItsData) {
  EXPECT_NE(dynamic_cast<QuadraticObjective*>(
                make_objective(quadratic_options(QuadraticPreset::epfl, 3, 1, 0), 0, 2, 1).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<LogisticObjective*>(make_objective(synthetic_options(3, 5, 0), 0, 2, 1).get()), nullptr);
  const TempFile file("factory.svm", libsvm_text(12, 3, 11));
  const Dataset data = read_libsvm(file.path());
  const auto options = libsvm_options(file.path(), DataSplit::random);
  const auto from_file = make_objective(options, 1, 3, 7);
  const auto from_data = make_objective(options, 1, 3, 7, &data);
  const Eigen::VectorXd x = stream_point(3, 70);
  EXPECT_EQ(from_file->loss(x), from_data->loss(x));
  EXPECT_TRUE(
      same_bits(stochastic_gradient_of(*from_file, x, 2, 1, 1), stochastic_gradient_of(*from_data, x, 2, 1, 1)));
  EXPECT_THROW(make_objective(options, 3, 3, 7, &data), std::out_of_range);
  EXPECT_THROW(gradient_of(*from_data, Eigen::VectorXd::Zero(4)), std::invalid_argument);
  EXPECT_TRUE(starts_with(config_error([&] { stochastic_gradient_of(*from_data, x, 0, 1, 1); }), "--batch: 0 "));
}

}  // namespace
}  // namespace avb
