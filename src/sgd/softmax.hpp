// Multinomial logistic regression (--objective softmax) on IDX images
// (sgd/idx.hpp): K classes, d pixels scaled to [0, 1], the model
//
//   x = (w_0, ..., w_{K-1}, b)    w_c in R^d class c's weights, b in R^K the biases,
//
// so dim() = K (d + 1) (7,850 for Fashion-MNIST), and
//
//   f(x) = sum_s v_s [log sum_c exp(z_sc) - z_{s,y_s}] + (lambda/2) ||x||^2,  z_s = W a_s + b,
//
// with v_s = 1/m_i on peer i (and 1/(N m_i) in the pooled f, the mean of the f_i
// exactly for unequal shards), lambda on W and b alike, as the binary logistic's.
// Batch losses and gradients are matrix products over blocks of rows, each
// block's pixels converted to doubles only while it is used.
#pragma once

#include <Eigen/Dense>

#include <atomic>
#include <cstdint>
#include <memory>

#include "sgd/image_objective.hpp"

namespace avb {

// The share of images whose highest-scoring class is their label, for the model
// x = (W row by row, then b) of a softmax over data.classes classes; ties go to
// the lower class. std::invalid_argument unless x has classes * (dim + 1) entries.
double softmax_accuracy(const ImageSet& data, const Eigen::Ref<const Eigen::VectorXd>& x);

class SoftmaxObjective final : public ImageObjective {
 public:
  // Throws as ImageObjective's constructor.
  SoftmaxObjective(ImageSet samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer);

  int dim() const override { return classes() * (samples_.dim() + 1); }
  double loss(const ConstVector& x) const override;
  void gradient(const ConstVector& x, Vector g) const override;
  // Both in one pass over the data (what L-BFGS asks for).
  double loss_and_gradient(const ConstVector& x, Vector g) const;
  // Uniform with replacement at counter (step, peer, draw) of Stream(seed,
  // sgd_noise), as LogisticObjective's; terms scaled by m v_s / batch.
  void stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                           Vector g) const override;

  double accuracy(const ImageSet& test, const ConstVector& x) const override { return softmax_accuracy(test, x); }

 private:
  // The loss and, when g is not null, the gradient.
  double evaluate(const ConstVector& x, Eigen::VectorXd* g) const;
};

// lambda: --l2, or 1/m for the m training samples when it is 0 (the default).
double softmax_l2(const ObjectiveOptions& options, long long samples);

// --data's images (the first --data-limit of them); `stop` as read_idx's.
ImageSet read_training_images(const ObjectiveOptions& options, const std::atomic<bool>* stop = nullptr);
// --test-data's images, refused (ConfigError) unless they have the training
// images' size and their labels are among its classes.
ImageSet read_test_images(const std::string& path, const ImageSet& training, const std::atomic<bool>* stop = nullptr);

// Peer `peer`'s shard (shard_rows by the labels, weights 1/m_i), as the rank
// that holds the file builds it for that peer.
std::unique_ptr<SoftmaxObjective> softmax_peer(const ObjectiveOptions& options, const ImageSet& data, int peer,
                                               int n_peers, std::uint64_t seed);
// The pooled f over all of `data` (kept in file order, each row weighted 1/(N m_i)
// by the shard it falls in). Takes the data: it is the largest copy.
std::unique_ptr<SoftmaxObjective> softmax_pooled(const ObjectiveOptions& options, ImageSet data, int n_peers,
                                                 std::uint64_t seed);

}  // namespace avb
