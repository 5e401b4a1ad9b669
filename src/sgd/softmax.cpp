#include "sgd/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace avb {

SoftmaxObjective::SoftmaxObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer)
    : ImageObjective(std::move(samples), std::move(weights), l2, counter_peer) {}

double SoftmaxObjective::evaluate(const ConstVector& x, Eigen::VectorXd* g) const {
  const Eigen::Index d = samples_.dim(), k = classes(), m = samples_.samples();
  const Eigen::Map<const Eigen::MatrixXd> w(x.data(), d, k);
  const Eigen::RowVectorXd bias = x.tail(k).transpose();
  Eigen::MatrixXd gw;
  Eigen::RowVectorXd gb;
  if (g != nullptr) {
    gw = Eigen::MatrixXd::Zero(d, k);
    gb = Eigen::RowVectorXd::Zero(k);
  }
  double loss = 0.0;
  std::vector<int> rows;
  for (Eigen::Index first = 0; first < m; first += kImageBlockRows) {
    const Eigen::Index count = std::min(kImageBlockRows, m - first);
    const Eigen::MatrixXd features = samples_.pixels.middleRows(first, count).cast<double>() * kPixelScale;
    ClassMatrix z = features * w;
    z.rowwise() += bias;
    rows.resize(static_cast<std::size_t>(count));
    for (Eigen::Index s = 0; s < count; ++s) rows[static_cast<std::size_t>(s)] = static_cast<int>(first + s);
    const Eigen::VectorXd losses = softmax_residuals(z, samples_.labels, rows);
    const auto v = weights_.segment(first, count);
    loss += v.dot(losses);
    if (g == nullptr) continue;
    z = v.asDiagonal() * z;
    gw.noalias() += features.transpose() * z;
    gb += z.colwise().sum();
  }
  if (g != nullptr) {
    g->resize(dim());
    g->head(d * k) = Eigen::Map<const Eigen::VectorXd>(gw.data(), d * k);
    g->tail(k) = gb.transpose();
    *g += l2_ * x;
  }
  return loss + 0.5 * l2_ * x.squaredNorm();
}

double SoftmaxObjective::loss(const ConstVector& x) const {
  check_sizes(x, nullptr);
  return evaluate(x, nullptr);
}

void SoftmaxObjective::gradient(const ConstVector& x, Vector g) const { loss_and_gradient(x, g); }

double SoftmaxObjective::loss_and_gradient(const ConstVector& x, Vector g) const {
  check_sizes(x, &g);
  Eigen::VectorXd out;
  const double loss = evaluate(x, &out);
  g = out;
  return loss;
}

void SoftmaxObjective::stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                                           Vector g) const {
  check_sizes(x, &g);
  const Eigen::Index d = samples_.dim(), k = classes();
  const Eigen::Map<const Eigen::MatrixXd> w(x.data(), d, k);
  const Eigen::RowVectorXd bias = x.tail(k).transpose();
  Eigen::MatrixXd gw = Eigen::MatrixXd::Zero(d, k);
  Eigen::RowVectorXd gb = Eigen::RowVectorXd::Zero(k);
  for_each_batch_block(batch, seed, step, [&](const BatchBlock& block) {
    ClassMatrix z = block.features * w;
    z.rowwise() += bias;
    softmax_residuals(z, samples_.labels, block.rows);
    z = block.coefficients.asDiagonal() * z;
    gw.noalias() += block.features.transpose() * z;
    gb += z.colwise().sum();
  });
  g.head(d * k) = Eigen::Map<const Eigen::VectorXd>(gw.data(), d * k);
  g.tail(k) = gb.transpose();
  g += l2_ * x;
}

double softmax_l2(const ObjectiveOptions& options, long long samples) {
  return options.l2 > 0.0 ? options.l2 : 1.0 / static_cast<double>(samples);
}

ImageSet read_training_images(const ObjectiveOptions& options, const std::atomic<bool>* stop) {
  return read_idx(options.data_path, "--data", options.data_limit, stop);
}

ImageSet read_test_images(const std::string& path, const ImageSet& training, const std::atomic<bool>* stop) {
  ImageSet test = read_idx(path, "--test-data", 0, stop);
  const std::string where = "--test-data " + path + ": ";
  if (test.dim() != training.dim())
    throw ConfigError(where + "images of " + std::to_string(test.dim()) + " pixels, --data's have " +
                      std::to_string(training.dim()));
  if (test.classes > training.classes)
    throw ConfigError(where + "label " + std::to_string(test.classes - 1) + " is outside --data's " +
                      std::to_string(training.classes) + " classes");
  test.classes = training.classes;
  return test;
}

std::unique_ptr<SoftmaxObjective> softmax_peer(const ObjectiveOptions& options, const ImageSet& data, int peer,
                                               int n_peers, std::uint64_t seed) {
  ImageSet shard = peer_images(options, data, peer, n_peers, seed);
  const Eigen::Index m = shard.samples();
  return std::make_unique<SoftmaxObjective>(std::move(shard), Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m)),
                                            softmax_l2(options, data.samples()), static_cast<std::uint64_t>(peer));
}

std::unique_ptr<SoftmaxObjective> softmax_pooled(const ObjectiveOptions& options, ImageSet data, int n_peers,
                                                 std::uint64_t seed) {
  Eigen::VectorXd weights = pooled_image_weights(options, data, n_peers, seed);
  const double l2 = softmax_l2(options, data.samples());
  return std::make_unique<SoftmaxObjective>(std::move(data), std::move(weights), l2,
                                            static_cast<std::uint64_t>(n_peers));
}

double softmax_accuracy(const ImageSet& data, const Eigen::Ref<const Eigen::VectorXd>& x) {
  const Eigen::Index d = data.dim(), k = data.classes;
  if (x.size() != k * (d + 1))
    throw std::invalid_argument("softmax_accuracy: a model of " + std::to_string(x.size()) + " values for " +
                                std::to_string(k) + " classes of " + std::to_string(d) + " pixels");
  if (data.samples() == 0) return 0.0;
  const Eigen::Map<const Eigen::MatrixXd> weights(x.data(), d, k);  // column c: class c's weights
  const auto bias = x.tail(k).transpose();
  long long correct = 0;
  for (Eigen::Index first = 0; first < data.samples(); first += kImageBlockRows) {
    const Eigen::Index rows = std::min(kImageBlockRows, data.samples() - first);
    const Eigen::MatrixXd features = data.pixels.middleRows(first, rows).cast<double>() * kPixelScale;
    ClassMatrix scores = features * weights;
    scores.rowwise() += bias;
    correct += correct_predictions(scores, data.labels, first);
  }
  return static_cast<double>(correct) / data.samples();
}

}  // namespace avb
