// Where a problem's data comes from, on either engine (sgd/problem_data.hpp).
#include "sgd/problem_data.hpp"

#include <utility>

#include "sgd/libsvm.hpp"

namespace avb {

namespace {

// Every peer's rows of the data set (ConfigError if some peer would get none).
std::vector<std::vector<int>> split_rows(const TrainingOptions& options, const Eigen::VectorXd& labels, int n) {
  return peer_rows(labels, options.objective.split_spec(), n, options.seed, options.objective.data_path);
}

}  // namespace

Dataset read_data(const TrainingOptions& options, int n, Problem& p, std::vector<std::vector<int>>& rows,
                  const std::atomic<bool>* stop) {
  const ObjectiveOptions& o = options.objective;
  Dataset data = keep_first(read_libsvm(o.data_path, o.data_dim, "--data", stop), o.data_limit);
  rows = split_rows(options, data.labels, n);
  if (!options.test_data.empty()) {
    p.test = read_libsvm(options.test_data, data.dim(), "--test-data", stop);
    p.test_set_kind = "file";
  } else {
    p.test_set_kind = "train";
  }
  return data;
}

void pool_data(const TrainingOptions& options, int n, Dataset&& data, Problem& p, const std::atomic<bool>* stop) {
  p.pooled = make_objective(options.objective, pooled, n, options.seed, &data, stop);
  if (!p.test) p.test = std::move(data);
}

ImageSet read_images(const TrainingOptions& options, int n, Problem& p, std::vector<std::vector<int>>& rows,
                     const std::atomic<bool>* stop) {
  const ObjectiveOptions& o = options.objective;
  ImageSet data = read_training_images(o, stop);
  rows = split_rows(options, data.label_values(), n);
  if (!options.test_data.empty()) {
    p.test_images = read_test_images(options.test_data, data, stop);
    p.test_set_kind = "file";
  } else {
    p.test_set_kind = "train";
  }
  return data;
}

void pool_images(const TrainingOptions& options, const ImageModel& model, int n, ImageSet&& data, Problem& p) {
  if (!p.test_images) p.test_images = data;
  p.pooled = image_pooled(model, options.objective, std::move(data), n, options.seed);
}

void generate_test_set(const ObjectiveOptions& o, std::uint64_t seed, int n, Problem& p) {
  if (o.kind == ObjectiveKind::logistic) {
    // A peer no one has (peer N of N + 1): same classes, fresh samples, balanced.
    ObjectiveOptions held_out = o;
    held_out.label_skew = 0.0;
    held_out.samples_per_peer = kHeldOutSamples;
    p.test = synthetic_shard(held_out, n, n + 1, seed);
    p.test_set_kind = "synthetic-held-out";
  }
}

}  // namespace avb
