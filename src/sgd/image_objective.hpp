// What the two image classifiers share (--objective softmax, sgd/softmax.hpp, and
// --objective mlp, sgd/mlp.hpp): labelled IDX images with a weight per sample,
// an L2 weight, the accuracy on a test set, and how a shard of a data set becomes
// one peer's f_i (or the pooled f) of either model.
#pragma once

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <vector>

#include "sgd/idx.hpp"
#include "sgd/objective.hpp"

namespace avb {

// Scores of a block of samples, one row each, a column per class.
using ClassMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows of images converted to doubles at a time: 2048 x 784 doubles is 12.8 MB.
inline constexpr Eigen::Index kImageBlockRows = 2048;

// Turns the scores z (row s: sample rows[s]) into p - e_y and returns each row's
// cross entropy log sum_c exp(z_c) - z_y. Shifted by each row's largest score, so
// no score overflows.
Eigen::VectorXd softmax_residuals(ClassMatrix& z, const std::vector<std::uint8_t>& labels,
                                  const std::vector<int>& rows);

// How many rows of `scores` have their largest entry (the first of equal ones) at
// the label of sample first + s of `labels`.
long long correct_predictions(const Eigen::Ref<const ClassMatrix>& scores, const std::vector<std::uint8_t>& labels,
                              Eigen::Index first);

// f(x) = sum_s v_s CE(scores(x, a_s), y_s) + (lambda/2) ||theta(x)||^2 over a peer's
// images (v_s = 1/m_i), or over all of them for the pooled f (v_s = 1/(N m_i)).
class ImageObjective : public Objective {
 public:
  int classes() const { return samples_.classes; }
  const ImageSet& samples() const { return samples_; }
  const Eigen::VectorXd& weights() const { return weights_; }
  double l2() const { return l2_; }

  // The share of test's images whose highest score is their label; ties go to the
  // lower class. std::invalid_argument for a model of the wrong size.
  virtual double accuracy(const ImageSet& test, const ConstVector& x) const = 0;

 protected:
  // Throws std::invalid_argument unless samples, labels and weights have the same
  // non-zero count and every label is below samples.classes.
  ImageObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer);

  // A minibatch's images, drawn uniformly with replacement at counter (step, peer,
  // draw) of Stream(seed, sgd_noise), as the logistic's, kImageBlockRows at a time:
  // their rows, their pixels as doubles, and coefficients m v_s / batch, which keep
  // the estimate unbiased for unequal weights. Throws ConfigError for batch < 1.
  struct BatchBlock {
    std::vector<int> rows;
    Eigen::MatrixXd features;
    Eigen::VectorXd coefficients;
  };
  template <class F>
  void for_each_batch_block(int batch, std::uint64_t seed, std::uint64_t step, F&& use) const {
    check_batch(batch);
    for (int first = 0; first < batch; first += static_cast<int>(kImageBlockRows))
      use(draw_block(batch, first, seed, step));
  }

  ImageSet samples_;
  Eigen::VectorXd weights_;
  double l2_;

 private:
  static void check_batch(int batch);
  BatchBlock draw_block(int batch, int first, std::uint64_t seed, std::uint64_t step) const;
};

// The model that --objective names, for images of `pixels` pixels in `classes`
// classes: it makes the f_i of every shard. The MLP's initial weights are drawn
// once here and shared by every f_i made.
class ImageModel {
 public:
  ImageModel(const ObjectiveOptions& options, int pixels, int classes, std::uint64_t seed);

  std::unique_ptr<ImageObjective> make(ImageSet samples, Eigen::VectorXd weights, double l2,
                                       std::uint64_t counter_peer) const;
  Eigen::Index dim() const;

 private:
  ObjectiveKind kind_;
  int pixels_, classes_, hidden_;
  std::shared_ptr<const Eigen::VectorXd> initial_;  // the MLP's theta_0; null for the softmax
};

// The model's dimension from the options and the images' sizes alone (for the
// run's estimate): K (d + 1) for the softmax, h (d + 1) + K (h + 1) for the MLP.
Eigen::Index image_model_dim(const ObjectiveOptions& options, int pixels, int classes);

// Peer `peer`'s images of `data` (shard_rows by the labels), and the weight of
// every image of `data` in the pooled f, 1/(N m_i) by the shard it falls in.
ImageSet peer_images(const ObjectiveOptions& options, const ImageSet& data, int peer, int n_peers, std::uint64_t seed);
Eigen::VectorXd pooled_image_weights(const ObjectiveOptions& options, const ImageSet& data, int n_peers,
                                     std::uint64_t seed);

// Peer `peer`'s f_i (its peer_images, weights 1/m_i).
std::unique_ptr<ImageObjective> image_peer(const ImageModel& model, const ObjectiveOptions& options,
                                           const ImageSet& data, int peer, int n_peers, std::uint64_t seed);
// The same from the peer's rows of peer_rows (building every peer: one split, not N).
std::unique_ptr<ImageObjective> image_peer(const ImageModel& model, const ObjectiveOptions& options,
                                           const ImageSet& data, const std::vector<int>& rows, int peer);
// The pooled f over all of `data` (file order, each row weighted 1/(N m_i) by the
// shard it falls in). Takes the data: it is the largest copy.
std::unique_ptr<ImageObjective> image_pooled(const ImageModel& model, const ObjectiveOptions& options, ImageSet data,
                                             int n_peers, std::uint64_t seed);

}  // namespace avb
