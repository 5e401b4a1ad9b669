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

namespace {

// Rows converted to doubles at a time: 2048 x 784 doubles is 12.8 MB.
constexpr Eigen::Index kSoftmaxBlockRows = 2048;

using ClassMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Turns the scores z (one row per sample) into p - e_y, and returns the rows'
// log sum_c exp(z_c) - z_y. Shifted by each row's largest score: no overflow.
Eigen::VectorXd softmax_residuals(ClassMatrix& z, const std::vector<std::uint8_t>& labels,
                                  const std::vector<int>& rows) {
  Eigen::VectorXd losses(z.rows());
  for (Eigen::Index s = 0; s < z.rows(); ++s) {
    auto row = z.row(s);
    const double top = row.maxCoeff();
    const int y = labels[static_cast<std::size_t>(rows[static_cast<std::size_t>(s)])];
    const double shifted_label_score = row[y] - top;
    row.array() = (row.array() - top).exp();
    const double sum = row.sum();  // >= 1: the largest score's term is exp(0)
    losses[s] = std::log(sum) - shifted_label_score;
    row /= sum;
    row[y] -= 1.0;
  }
  return losses;
}

}  // namespace

SoftmaxObjective::SoftmaxObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer)
    : Objective(counter_peer), samples_(std::move(samples)), weights_(std::move(weights)), l2_(l2) {
  const auto m = static_cast<std::size_t>(samples_.samples());
  if (m < 1 || samples_.labels.size() != m || static_cast<std::size_t>(weights_.size()) != m)
    throw std::invalid_argument("SoftmaxObjective: samples, labels and weights must have the same non-zero count");
  for (std::uint8_t y : samples_.labels)
    if (y >= samples_.classes)
      throw std::invalid_argument("SoftmaxObjective: label " + std::to_string(y) + " of " +
                                  std::to_string(samples_.classes) + " classes");
}

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
  for (Eigen::Index first = 0; first < m; first += kSoftmaxBlockRows) {
    const Eigen::Index count = std::min(kSoftmaxBlockRows, m - first);
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
  if (batch < 1) throw ConfigError("--batch: " + std::to_string(batch) + " is not an integer >= 1");
  const Eigen::Index d = samples_.dim(), k = classes();
  const Eigen::Map<const Eigen::MatrixXd> w(x.data(), d, k);
  const Eigen::RowVectorXd bias = x.tail(k).transpose();
  const Stream stream(seed, StreamId::sgd_noise);
  const auto m = static_cast<std::uint64_t>(samples_.samples());
  const double scale = static_cast<double>(m) / batch;
  Eigen::MatrixXd gw = Eigen::MatrixXd::Zero(d, k);
  Eigen::RowVectorXd gb = Eigen::RowVectorXd::Zero(k);
  std::vector<int> rows;
  for (int first = 0; first < batch; first += static_cast<int>(kSoftmaxBlockRows)) {
    const int count = std::min(static_cast<int>(kSoftmaxBlockRows), batch - first);
    rows.resize(static_cast<std::size_t>(count));
    Eigen::MatrixXd features(count, d);
    Eigen::VectorXd coefficients(count);
    for (int b = 0; b < count; ++b) {
      const auto draw = static_cast<std::uint64_t>(first + b);
      const auto s = static_cast<Eigen::Index>(stream.below(m, step, counter_peer(), draw));
      rows[static_cast<std::size_t>(b)] = static_cast<int>(s);
      features.row(b) = samples_.pixels.row(s).cast<double>() * kPixelScale;
      coefficients[b] = scale * weights_[s];
    }
    ClassMatrix z = features * w;
    z.rowwise() += bias;
    softmax_residuals(z, samples_.labels, rows);
    z = coefficients.asDiagonal() * z;
    gw.noalias() += features.transpose() * z;
    gb += z.colwise().sum();
  }
  g.head(d * k) = Eigen::Map<const Eigen::VectorXd>(gw.data(), d * k);
  g.tail(k) = gb.transpose();
  g += l2_ * x;
}

double softmax_l2(const ObjectiveOptions& options, long long samples) {
  return options.l2 > 0.0 ? options.l2 : 1.0 / static_cast<double>(samples);
}

ImageSet read_training_images(const ObjectiveOptions& options) {
  return read_idx(options.data_path, "--data", options.data_limit);
}

ImageSet read_test_images(const std::string& path, const ImageSet& training) {
  ImageSet test = read_idx(path, "--test-data");
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
  const std::vector<int> rows =
      shard_rows(data.label_values(), options.split, peer, n_peers, seed, options.data_path);
  ImageSet shard = select_images(data, rows);
  const Eigen::Index m = shard.samples();
  Eigen::VectorXd weights = Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m));
  return std::make_unique<SoftmaxObjective>(std::move(shard), std::move(weights),
                                            softmax_l2(options, data.samples()), static_cast<std::uint64_t>(peer));
}

std::unique_ptr<SoftmaxObjective> softmax_pooled(const ObjectiveOptions& options, ImageSet data, int n_peers,
                                                 std::uint64_t seed) {
  const std::vector<int> owners = row_owners(data.label_values(), options.split, n_peers, seed, options.data_path);
  std::vector<double> shard_sizes(static_cast<std::size_t>(n_peers), 0.0);
  for (int owner : owners) shard_sizes[static_cast<std::size_t>(owner)] += 1.0;
  Eigen::VectorXd weights(static_cast<Eigen::Index>(owners.size()));
  for (std::size_t r = 0; r < owners.size(); ++r)
    weights[static_cast<Eigen::Index>(r)] = 1.0 / shard_sizes[static_cast<std::size_t>(owners[r])] / n_peers;
  const double l2 = softmax_l2(options, data.samples());
  return std::make_unique<SoftmaxObjective>(std::move(data), std::move(weights), l2,
                                            static_cast<std::uint64_t>(n_peers));
}

}  // namespace avb
