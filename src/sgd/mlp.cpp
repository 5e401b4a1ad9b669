#include "sgd/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace avb {

namespace {

using ConstMatrixMap = Eigen::Map<const Eigen::MatrixXd>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;

// theta's four parts, in place: W1, b1, W2, b2.
template <class Matrix, class Vector, class Pointer>
struct Parts {
  Matrix w1;
  Vector b1;
  Matrix w2;
  Vector b2;
  Parts(const MlpShape& s, Pointer p)
      : w1(p, s.inputs, s.hidden),
        b1(p + static_cast<Eigen::Index>(s.inputs) * s.hidden, s.hidden),
        w2(p + static_cast<Eigen::Index>(s.inputs + 1) * s.hidden, s.hidden, s.classes),
        b2(p + static_cast<Eigen::Index>(s.inputs + 1 + s.classes) * s.hidden, s.classes) {}
};
using Network = Parts<ConstMatrixMap, ConstVectorMap, const double*>;
using Gradient = Parts<Eigen::Map<Eigen::MatrixXd>, Eigen::Map<Eigen::VectorXd>, double*>;

// The hidden layer's activations relu(A W1 + b1) of a block of images A.
Eigen::MatrixXd hidden_layer(const Network& net, const Eigen::MatrixXd& features) {
  Eigen::MatrixXd hidden = features * net.w1;
  hidden.rowwise() += net.b1.transpose();
  return hidden.cwiseMax(0.0);
}

ClassMatrix output_scores(const Network& net, const Eigen::MatrixXd& hidden) {
  ClassMatrix z = hidden * net.w2;
  z.rowwise() += net.b2.transpose();
  return z;
}

// sum_s c_s CE over a block (row s: image rows[s], weighted coefficients[s]); adds
// that sum's gradient to *grad when it is not null. Backpropagation: the output's
// residuals c_s (p - e_y) give W2's and b2's parts, and, through W2 and the ReLU's
// mask (relu'(0) = 0), the hidden layer's, which give W1's and b1's.
double block_pass(const Network& net, const Eigen::MatrixXd& features, const std::vector<std::uint8_t>& labels,
                  const std::vector<int>& rows, const Eigen::VectorXd& coefficients, Gradient* grad) {
  const Eigen::MatrixXd hidden = hidden_layer(net, features);
  ClassMatrix z = output_scores(net, hidden);
  const double loss = coefficients.dot(softmax_residuals(z, labels, rows));
  if (grad == nullptr) return loss;
  z = coefficients.asDiagonal() * z;
  grad->w2.noalias() += hidden.transpose() * z;
  grad->b2 += z.colwise().sum().transpose();
  Eigen::MatrixXd back = z * net.w2.transpose();
  back = (hidden.array() > 0.0).select(back, 0.0);
  grad->w1.noalias() += features.transpose() * back;
  grad->b1 += back.colwise().sum().transpose();
  return loss;
}

}  // namespace

Eigen::VectorXd mlp_initial_model(const MlpShape& shape, std::uint64_t seed) {
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dim());
  const Stream stream(seed, StreamId::model_init);
  Gradient parts(shape, theta.data());  // writable views of theta's parts
  const double first = std::sqrt(2.0 / shape.inputs), second = std::sqrt(1.0 / shape.hidden);
  for (Eigen::Index e = 0; e < parts.w1.size(); ++e)
    parts.w1.data()[e] = first * stream.normal(0, 0, static_cast<std::uint64_t>(e));
  for (Eigen::Index e = 0; e < parts.w2.size(); ++e)
    parts.w2.data()[e] = second * stream.normal(1, 0, static_cast<std::uint64_t>(e));
  return theta;
}

MlpObjective::MlpObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer,
                           int hidden, std::shared_ptr<const Eigen::VectorXd> initial)
    : ImageObjective(std::move(samples), std::move(weights), l2, counter_peer),
      shape_{samples_.dim(), hidden, samples_.classes},
      initial_(std::move(initial)) {
  if (hidden < 1 || !initial_ || initial_->size() != shape_.dim())
    throw std::invalid_argument("MlpObjective: the initial model must have h (d + 1) + K (h + 1) entries, h >= 1");
}

double MlpObjective::evaluate(const ConstVector& x, Vector* g) const {
  const Eigen::VectorXd theta = *initial_ + x;
  const Network net(shape_, theta.data());
  std::optional<Gradient> grad;
  if (g != nullptr) {
    g->setZero();
    grad.emplace(shape_, g->data());
  }
  const Eigen::Index m = samples_.samples();
  double loss = 0.0;
  std::vector<int> rows;
  for (Eigen::Index first = 0; first < m; first += kImageBlockRows) {
    const Eigen::Index count = std::min(kImageBlockRows, m - first);
    const Eigen::MatrixXd features = samples_.pixels.middleRows(first, count).cast<double>() * kPixelScale;
    rows.resize(static_cast<std::size_t>(count));
    for (Eigen::Index s = 0; s < count; ++s) rows[static_cast<std::size_t>(s)] = static_cast<int>(first + s);
    loss += block_pass(net, features, samples_.labels, rows, weights_.segment(first, count), grad ? &*grad : nullptr);
  }
  if (g != nullptr) *g += l2_ * theta;
  return loss + 0.5 * l2_ * theta.squaredNorm();
}

double MlpObjective::loss(const ConstVector& x) const {
  check_sizes(x, nullptr);
  return evaluate(x, nullptr);
}

void MlpObjective::gradient(const ConstVector& x, Vector g) const {
  check_sizes(x, &g);
  evaluate(x, &g);
}

void MlpObjective::stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                                       Vector g) const {
  check_sizes(x, &g);
  const Eigen::VectorXd theta = *initial_ + x;
  const Network net(shape_, theta.data());
  g.setZero();
  Gradient grad(shape_, g.data());
  for_each_batch_block(batch, seed, step, [&](const BatchBlock& block) {
    block_pass(net, block.features, samples_.labels, block.rows, block.coefficients, &grad);
  });
  g += l2_ * theta;
}

double MlpObjective::accuracy(const ImageSet& test, const ConstVector& x) const {
  if (x.size() != dim() || test.dim() != shape_.inputs || test.classes > shape_.classes)
    throw std::invalid_argument("MlpObjective::accuracy: a model of " + std::to_string(x.size()) + " values for " +
                                std::to_string(test.dim()) + " pixels, " + std::to_string(test.classes) +
                                " classes");
  if (test.samples() == 0) return 0.0;
  const Eigen::VectorXd theta = *initial_ + x;
  const Network net(shape_, theta.data());
  long long correct = 0;
  for (Eigen::Index first = 0; first < test.samples(); first += kImageBlockRows) {
    const Eigen::Index count = std::min(kImageBlockRows, test.samples() - first);
    const Eigen::MatrixXd features = test.pixels.middleRows(first, count).cast<double>() * kPixelScale;
    correct += correct_predictions(output_scores(net, hidden_layer(net, features)), test.labels, first);
  }
  return static_cast<double>(correct) / test.samples();
}

}  // namespace avb
