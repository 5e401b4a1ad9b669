#include "sgd/image_objective.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/mlp.hpp"
#include "sgd/softmax.hpp"

namespace avb {

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

long long correct_predictions(const Eigen::Ref<const ClassMatrix>& scores, const std::vector<std::uint8_t>& labels,
                              Eigen::Index first) {
  long long correct = 0;
  for (Eigen::Index s = 0; s < scores.rows(); ++s) {
    Eigen::Index best = 0;  // the first of equal scores
    for (Eigen::Index c = 1; c < scores.cols(); ++c)
      if (scores(s, c) > scores(s, best)) best = c;
    correct += best == labels[static_cast<std::size_t>(first + s)];
  }
  return correct;
}

ImageObjective::ImageObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer)
    : Objective(counter_peer), samples_(std::move(samples)), weights_(std::move(weights)), l2_(l2) {
  const auto m = static_cast<std::size_t>(samples_.samples());
  if (m < 1 || samples_.labels.size() != m || static_cast<std::size_t>(weights_.size()) != m)
    throw std::invalid_argument("ImageObjective: samples, labels and weights must have the same non-zero count");
  for (std::uint8_t y : samples_.labels)
    if (y >= samples_.classes)
      throw std::invalid_argument("ImageObjective: label " + std::to_string(y) + " of " +
                                  std::to_string(samples_.classes) + " classes");
}

void ImageObjective::check_batch(int batch) {
  if (batch < 1) throw ConfigError("--batch: " + std::to_string(batch) + " is not an integer >= 1");
}

ImageObjective::BatchBlock ImageObjective::draw_block(int batch, int first, std::uint64_t seed,
                                                      std::uint64_t step) const {
  const int count = std::min(static_cast<int>(kImageBlockRows), batch - first);
  const Stream stream(seed, StreamId::sgd_noise);
  const auto m = static_cast<std::uint64_t>(samples_.samples());
  const double scale = static_cast<double>(m) / batch;
  BatchBlock block{std::vector<int>(static_cast<std::size_t>(count)), Eigen::MatrixXd(count, samples_.dim()),
                   Eigen::VectorXd(count)};
  for (int b = 0; b < count; ++b) {
    const auto s = static_cast<Eigen::Index>(stream.below(m, step, counter_peer(), static_cast<std::uint64_t>(first + b)));
    block.rows[static_cast<std::size_t>(b)] = static_cast<int>(s);
    block.features.row(b) = samples_.pixels.row(s).cast<double>() * kPixelScale;
    block.coefficients[b] = scale * weights_[s];
  }
  return block;
}

ImageModel::ImageModel(const ObjectiveOptions& options, int pixels, int classes, std::uint64_t seed)
    : kind_(options.kind), pixels_(pixels), classes_(classes), hidden_(options.hidden) {
  if (kind_ == ObjectiveKind::mlp)
    initial_ = std::make_shared<const Eigen::VectorXd>(mlp_initial_model(MlpShape{pixels, hidden_, classes}, seed));
  else if (kind_ != ObjectiveKind::softmax)
    throw std::invalid_argument("ImageModel: --objective " + std::string(to_string(kind_)) + " is not an image model");
}

std::unique_ptr<ImageObjective> ImageModel::make(ImageSet samples, Eigen::VectorXd weights, double l2,
                                                 std::uint64_t counter_peer) const {
  if (kind_ == ObjectiveKind::mlp)
    return std::make_unique<MlpObjective>(std::move(samples), std::move(weights), l2, counter_peer, hidden_, initial_);
  return std::make_unique<SoftmaxObjective>(std::move(samples), std::move(weights), l2, counter_peer);
}

Eigen::Index ImageModel::dim() const {
  ObjectiveOptions o;
  o.kind = kind_;
  o.hidden = hidden_;
  return image_model_dim(o, pixels_, classes_);
}

Eigen::Index image_model_dim(const ObjectiveOptions& options, int pixels, int classes) {
  const Eigen::Index d = pixels, k = classes;
  return options.kind == ObjectiveKind::mlp ? MlpShape{pixels, options.hidden, classes}.dim() : k * (d + 1);
}

ImageSet peer_images(const ObjectiveOptions& options, const ImageSet& data, int peer, int n_peers,
                     std::uint64_t seed) {
  return select_images(data, shard_rows(data.label_values(), options.split_spec(), peer, n_peers, seed, options.data_path));
}

Eigen::VectorXd pooled_image_weights(const ObjectiveOptions& options, const ImageSet& data, int n_peers,
                                     std::uint64_t seed) {
  const std::vector<int> owners = row_owners(data.label_values(), options.split_spec(), n_peers, seed, options.data_path);
  std::vector<double> shard_sizes(static_cast<std::size_t>(n_peers), 0.0);
  for (int owner : owners) shard_sizes[static_cast<std::size_t>(owner)] += 1.0;
  Eigen::VectorXd weights(static_cast<Eigen::Index>(owners.size()));
  for (std::size_t r = 0; r < owners.size(); ++r)
    weights[static_cast<Eigen::Index>(r)] = 1.0 / shard_sizes[static_cast<std::size_t>(owners[r])] / n_peers;
  return weights;
}

std::unique_ptr<ImageObjective> image_peer(const ImageModel& model, const ObjectiveOptions& options,
                                           const ImageSet& data, int peer, int n_peers, std::uint64_t seed) {
  return image_peer(model, options, data, shard_rows(data.label_values(), options.split_spec(), peer, n_peers, seed,
                                                     options.data_path), peer);
}

std::unique_ptr<ImageObjective> image_peer(const ImageModel& model, const ObjectiveOptions& options,
                                           const ImageSet& data, const std::vector<int>& rows, int peer) {
  ImageSet shard = select_images(data, rows);
  const Eigen::Index m = shard.samples();
  return model.make(std::move(shard), Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m)),
                    softmax_l2(options, data.samples()), static_cast<std::uint64_t>(peer));
}

std::unique_ptr<ImageObjective> image_pooled(const ImageModel& model, const ObjectiveOptions& options, ImageSet data,
                                             int n_peers, std::uint64_t seed) {
  Eigen::VectorXd weights = pooled_image_weights(options, data, n_peers, seed);
  const double l2 = softmax_l2(options, data.samples());
  return model.make(std::move(data), std::move(weights), l2, static_cast<std::uint64_t>(n_peers));
}

}  // namespace avb
