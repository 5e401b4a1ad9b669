// Small image sets and model points for the image objectives' unit tests
// (test_softmax.cpp, test_mlp.cpp), from the test stream.
#pragma once

#include <Eigen/Dense>

#include <cstdint>

#include <gtest/gtest.h>

#include "core/rng.hpp"
#include "sgd/idx.hpp"
#include "sgd/objective.hpp"
#include "test_support.hpp"

namespace avb::test {

// m images of d pixels, image s labelled (7 s + 3) mod k, pixels from the test stream.
inline ImageSet random_images(int m, int d, int k, std::uint64_t which) {
  const Stream stream(which, StreamId::test);
  ImageSet data;
  data.classes = k;
  data.pixels.resize(m, d);
  data.labels.resize(static_cast<std::size_t>(m));
  for (int s = 0; s < m; ++s) {
    data.labels[static_cast<std::size_t>(s)] = static_cast<std::uint8_t>((s * 7 + 3) % k);
    for (int j = 0; j < d; ++j)
      data.pixels(s, j) = static_cast<std::uint8_t>(stream.below(256, 1, static_cast<std::uint64_t>(s),
                                                                 static_cast<std::uint64_t>(j)));
  }
  return data;
}

// d normal entries of standard deviation `scale`.
inline Eigen::VectorXd random_point(int d, std::uint64_t which, double scale) {
  const Stream stream(which, StreamId::test);
  Eigen::VectorXd x(d);
  for (int k = 0; k < d; ++k) x[k] = scale * stream.normal(which, 7, static_cast<std::uint64_t>(k));
  return x;
}

// f's gradient at x by central differences of step h.
inline Eigen::VectorXd numeric_gradient(const Objective& f, const Eigen::VectorXd& x, double h) {
  Eigen::VectorXd numeric(f.dim());
  for (int k = 0; k < f.dim(); ++k) {
    Eigen::VectorXd up = x, down = x;
    up[k] += h;
    down[k] -= h;
    numeric[k] = (f.loss(up) - f.loss(down)) / (2 * h);
  }
  return numeric;
}

// f's stochastic gradient at x is a pure function of (batch, seed, step), and its
// mean over 20,000 steps is within 2 % of the full gradient.
inline void expect_keyed_and_unbiased(const Objective& f, const Eigen::VectorXd& x) {
  Eigen::VectorXd g(f.dim()), again(f.dim()), mean = Eigen::VectorXd::Zero(f.dim()), full(f.dim());
  f.stochastic_gradient(x, 3, 11, 40, g);
  f.stochastic_gradient(x, 3, 11, 40, again);
  EXPECT_EQ(g, again);
  f.stochastic_gradient(x, 3, 11, 41, again);
  EXPECT_NE(g, again);
  constexpr int steps = 20000;
  for (int s = 0; s < steps; ++s) {
    f.stochastic_gradient(x, 4, 12, static_cast<std::uint64_t>(s), g);
    mean += g / steps;
  }
  f.gradient(x, full);
  EXPECT_LT((mean - full).norm(), 0.02 * full.norm());
  EXPECT_TRUE(starts_with(config_error([&] { f.stochastic_gradient(x, 0, 1, 1, g); }), "--batch: 0"));
}

}  // namespace avb::test
