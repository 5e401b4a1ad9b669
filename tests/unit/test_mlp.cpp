// --objective mlp (sgd/mlp.hpp): its gradient against finite differences, its
// keyed and unbiased stochastic gradient, theta_0's scale and keys, the pooled f
// as the mean of the peers' (which share theta_0), the accuracy of a network
// built by hand, and the lower-bound optimum that stands in for x*.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "image_data.hpp"
#include "test_support.hpp"

#include "sgd/image_objective.hpp"
#include "sgd/mlp.hpp"
#include "sgd/optimum.hpp"

namespace avb {
namespace {

using test::config_error;
using test::random_images;
using test::random_point;
using test::starts_with;

std::shared_ptr<const Eigen::VectorXd> start(const MlpShape& shape, std::uint64_t seed) {
  return std::make_shared<const Eigen::VectorXd>(mlp_initial_model(shape, seed));
}

// Weights (1 + s mod 3) / total: unequal, summing to 1.
Eigen::VectorXd unequal_weights(int m) {
  Eigen::VectorXd w(m);
  for (int s = 0; s < m; ++s) w[s] = 1.0 + s % 3;
  return w / w.sum();
}

TEST(MlpObjective, GradientMatchesFiniteDifferencesInEveryLayer) {
  const ImageSet data = random_images(11, 5, 3, 21);
  const MlpShape shape{5, 4, 3};
  ASSERT_EQ(shape.dim(), 4 * 6 + 3 * 5);
  const MlpObjective f(data, unequal_weights(11), 0.03, 0, 4, start(shape, 2));
  ASSERT_EQ(f.dim(), shape.dim());
  const Eigen::VectorXd x = random_point(f.dim(), 9, 0.3);
  Eigen::VectorXd g(f.dim());
  f.gradient(x, g);
  EXPECT_LT((g - test::numeric_gradient(f, x, 1e-6)).norm(), 1e-7 * g.norm());
  // Every layer has a gradient at the start x = 0 (at theta = 0 only b2's would be
  // non-zero): W1, b1, W2, b2 in that order.
  f.gradient(Eigen::VectorXd::Zero(f.dim()), g);
  EXPECT_GT(g.head(20).norm(), 0.0);
  EXPECT_GT(g.segment(20, 4).norm(), 0.0);
  EXPECT_GT(g.segment(24, 12).norm(), 0.0);
  EXPECT_GT(g.tail(3).norm(), 0.0);
  // The loss is the weighted cross entropy plus (l2/2) ||theta||^2: at a theta whose
  // output is 0 for every image (W2 = 0, b2 = 0), each image costs log K.
  Eigen::VectorXd flat = -*start(shape, 2);  // theta = 0
  EXPECT_NEAR(f.loss(flat), std::log(3.0), 1e-15);
  EXPECT_TRUE(std::isfinite(f.loss(x * 1e6)));
}

TEST(MlpObjective, StochasticGradientIsKeyedAndUnbiased) {
  const ImageSet data = random_images(7, 4, 3, 22);
  const MlpObjective f(data, unequal_weights(7), 0.1, 2, 3, start({4, 3, 3}, 5));
  const Eigen::VectorXd x = random_point(f.dim(), 6, 0.5);
  test::expect_keyed_and_unbiased(f, x);
}

TEST(MlpInitialModel, HeScaledKeyedBySeedWithZeroBiases) {
  const MlpShape shape{400, 50, 10};
  const Eigen::VectorXd theta = mlp_initial_model(shape, 8);
  EXPECT_EQ(theta, mlp_initial_model(shape, 8));
  EXPECT_NE(theta, mlp_initial_model(shape, 9));
  const Eigen::VectorXd w1 = theta.head(400 * 50), w2 = theta.segment(401 * 50, 50 * 10);
  EXPECT_EQ(theta.segment(400 * 50, 50).norm(), 0.0);
  EXPECT_EQ(theta.tail(10).norm(), 0.0);
  // Sample variances against 2/d and 1/h: 20,000 and 500 draws, within 4 standard
  // errors (sqrt(2/n) of the variance for normal draws).
  auto variance = [](const Eigen::VectorXd& v) { return v.squaredNorm() / static_cast<double>(v.size()); };
  EXPECT_NEAR(variance(w1) / (2.0 / 400), 1.0, 4 * std::sqrt(2.0 / 20000));
  EXPECT_NEAR(variance(w2) / (1.0 / 50), 1.0, 4 * std::sqrt(2.0 / 500));
  EXPECT_THROW(MlpObjective(random_images(3, 5, 2, 1), Eigen::VectorXd::Ones(3), 0.0, 0, 4, start({5, 3, 2}, 1)),
               std::invalid_argument);
}

TEST(MlpShards, PeersShareTheStartAndThePooledFIsTheirMean) {
  const ImageSet data = random_images(23, 6, 4, 23);
  ObjectiveOptions o;
  o.kind = ObjectiveKind::mlp;
  o.hidden = 5;
  o.data_path = "unused.gz";
  const ImageModel model(o, 6, 4, 31);
  EXPECT_EQ(model.dim(), 5 * 7 + 4 * 6);
  EXPECT_EQ(image_model_dim(o, 6, 4), model.dim());
  constexpr int n = 4;
  const auto pooled_f = image_pooled(model, o, data, n, 31);
  const Eigen::VectorXd x = random_point(static_cast<int>(model.dim()), 8, 0.3);
  double mean_loss = 0.0;
  for (int i = 0; i < n; ++i) mean_loss += image_peer(model, o, data, i, n, 31)->loss(x) / n;
  EXPECT_NEAR(pooled_f->loss(x), mean_loss, 1e-14);
  const auto first = image_peer(model, o, data, 0, n, 31);
  EXPECT_EQ(dynamic_cast<const MlpObjective&>(*first).shape().hidden, 5);
  EXPECT_EQ(pooled_f->loss(Eigen::VectorXd::Zero(model.dim())),
            dynamic_cast<const MlpObjective&>(*image_pooled(ImageModel(o, 6, 4, 31), o, data, n, 31))
                .loss(Eigen::VectorXd::Zero(model.dim())));
}

TEST(MlpAccuracy, ANetworkBuiltByHandClassifiesByItsLitPixel) {
  ImageSet data;
  data.classes = 3;
  data.pixels = PixelMatrix::Zero(6, 3);
  data.labels = {0, 1, 2, 2, 1, 0};
  for (int s = 0; s < 6; ++s) data.pixels(s, data.labels[static_cast<std::size_t>(s)]) = 255;
  const MlpShape shape{3, 3, 3};
  const auto theta0 = start(shape, 4);
  const MlpObjective f(data, Eigen::VectorXd::Constant(6, 1.0 / 6), 0.0, 0, 3, theta0);
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(f.dim());
  EXPECT_DOUBLE_EQ(f.accuracy(data, theta - *theta0), 2.0 / 6);  // all scores 0: class 0 everywhere
  for (int c = 0; c < 3; ++c) {
    theta[c * 3 + c] = 1.0;       // W1 = I: hidden unit c sees pixel c
    theta[12 + c * 3 + c] = 1.0;  // W2 = I: class c's score is hidden unit c
  }
  EXPECT_DOUBLE_EQ(f.accuracy(data, theta - *theta0), 1.0);
  theta[9 + 3 + 3 * 3 + 2] = 2.0;  // b2 of class 2 beats every lit pixel's 1
  EXPECT_DOUBLE_EQ(f.accuracy(data, theta - *theta0), 2.0 / 6);
  theta.segment(9, 3).setConstant(-2.0);  // b1 = -2: every hidden unit dead, scores b2 alone
  EXPECT_DOUBLE_EQ(f.accuracy(data, theta - *theta0), 2.0 / 6);
  EXPECT_THROW(f.accuracy(data, Eigen::VectorXd::Zero(5)), std::invalid_argument);
}

TEST(MlpOptimum, IsTheLowerBoundAtTheStart) {
  const MlpObjective f(random_images(5, 3, 2, 24), Eigen::VectorXd::Constant(5, 0.2), 0.01, 0, 2, start({3, 2, 2}, 1));
  const Optimum opt = find_optimum(f);
  EXPECT_TRUE(opt.converged);
  EXPECT_EQ(opt.loss, 0.0);
  EXPECT_EQ(opt.iterations, 0);
  EXPECT_EQ(opt.x, Eigen::VectorXd::Zero(f.dim()));
  EXPECT_STREQ(optimum_method(ObjectiveKind::mlp), "none");
}

}  // namespace
}  // namespace avb
