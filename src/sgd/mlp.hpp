// A multilayer perceptron on IDX images (--objective mlp): d pixels scaled to
// [0, 1], one hidden layer of h ReLU units, a softmax over K classes,
//
//   scores(a) = W2^T relu(W1^T a + b1) + b2,   theta = (W1, b1, W2, b2),
//
// W1 d x h and W2 h x K stored column by column, so the model has
// h (d + 1) + K (h + 1) parameters (101,770 for 784-128-10).
//
// The trained vector x is the offset from a keyed random start theta_0:
// theta = theta_0 + x. Every other objective starts at x = 0, and the trainers,
// measurements and failure rules all assume it; at theta = 0 a ReLU network has
// a zero gradient in every weight and would never move. Averaging x averages
// theta, as every peer shares theta_0.
//
// f(x) = sum_s v_s CE(scores(a_s), y_s) + (lambda/2) ||theta||^2, as the softmax's.
// Non-convex: no x* is computed (sgd/optimum.hpp).
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <memory>

#include "sgd/image_objective.hpp"

namespace avb {

struct MlpShape {
  int inputs = 0, hidden = 0, classes = 0;
  Eigen::Index dim() const {
    return static_cast<Eigen::Index>(hidden) * (inputs + 1) + static_cast<Eigen::Index>(classes) * (hidden + 1);
  }
};

// theta_0: W1 ~ N(0, 2/d) (He et al.'s for ReLU), W2 ~ N(0, 1/h), biases 0, drawn
// from Stream(seed, model_init) at counter (layer, 0, entry): the same start on
// every engine and for every rank count.
Eigen::VectorXd mlp_initial_model(const MlpShape& shape, std::uint64_t seed);

class MlpObjective final : public ImageObjective {
 public:
  // Throws as ImageObjective's constructor, and std::invalid_argument unless
  // `initial` has the shape's dimension.
  MlpObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer, int hidden,
               std::shared_ptr<const Eigen::VectorXd> initial);

  int dim() const override { return static_cast<int>(shape_.dim()); }
  const MlpShape& shape() const { return shape_; }
  double loss(const ConstVector& x) const override;
  void gradient(const ConstVector& x, Vector g) const override;
  // Uniform with replacement at counter (step, peer, draw) of Stream(seed,
  // sgd_noise), as the softmax's; terms scaled by m v_s / batch.
  void stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                           Vector g) const override;
  double accuracy(const ImageSet& test, const ConstVector& x) const override;

 private:
  // The loss over the whole shard and, when g is not null, its gradient.
  double evaluate(const ConstVector& x, Vector* g) const;

  MlpShape shape_;
  std::shared_ptr<const Eigen::VectorXd> initial_;
};

}  // namespace avb
