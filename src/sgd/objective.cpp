#include "sgd/objective.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "sgd/data_draws.hpp"
#include "sgd/softmax.hpp"

namespace avb {

void check_peer(int peer, int n_peers) {
  if (n_peers < 1) throw std::invalid_argument("objective: n_peers = " + std::to_string(n_peers) + " is below 1");
  if (peer != pooled && (peer < 0 || peer >= n_peers))
    throw std::out_of_range("objective: peer " + std::to_string(peer) + " is outside [0, " + std::to_string(n_peers) +
                            ")");
}

namespace {

std::uint64_t counter_peer_of(int peer, int n_peers) {
  return static_cast<std::uint64_t>(peer == pooled ? n_peers : peer);
}

void check_batch(int batch) {
  if (batch < 1) throw ConfigError("--batch: " + std::to_string(batch) + " is not an integer >= 1");
}

// ---- quadratic members ------------------------------------------------------------

// EPFL: A_i = epfl_scale(i, N) I.
double epfl_scale(int peer, int n_peers) {
  return static_cast<double>(peer + 1) / std::sqrt(static_cast<double>(n_peers));
}

Eigen::VectorXd quadratic_diagonal(const ObjectiveOptions& options, int peer, int n_peers) {
  const int d = options.dim;
  if (options.preset == QuadraticPreset::epfl) return Eigen::VectorXd::Constant(d, epfl_scale(peer, n_peers));
  // Geometric spacing from 1 to sqrt(kappa) makes the squares span exactly [1, kappa].
  Eigen::VectorXd a(d);
  for (int k = 0; k < d; ++k)
    a[k] = d == 1 ? 1.0 : std::pow(options.condition, static_cast<double>(k) / (2.0 * (d - 1)));
  return a;
}

Eigen::VectorXd quadratic_target(const ObjectiveOptions& options, int peer, std::uint64_t seed) {
  const Stream stream(seed, StreamId::data);
  const double scale = options.heterogeneity / static_cast<double>(peer + 1);
  Eigen::VectorXd b(options.dim);
  for (int k = 0; k < options.dim; ++k)
    b[k] = scale * stream.normal(draw_target, static_cast<std::uint64_t>(peer), static_cast<std::uint64_t>(k));
  return b;
}

// ---- logistic data ----------------------------------------------------------------

struct WeightedSamples {
  Dataset samples;
  Eigen::VectorXd weights;
  double l2 = 0.0;
};

// The peer's shard (weights 1/m_i) or all shards in peer order (weights 1/(N m_i)).
WeightedSamples logistic_samples(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                                 const Dataset* given, const std::atomic<bool>* stop) {
  WeightedSamples out;
  if (options.data_path.empty() && given == nullptr) {
    const double m_total = static_cast<double>(n_peers) * options.samples_per_peer;
    out.l2 = 1.0 / m_total;
    if (peer != pooled) {
      out.samples = synthetic_shard(options, peer, n_peers, seed, stop);
      out.weights = Eigen::VectorXd::Constant(out.samples.samples(), 1.0 / options.samples_per_peer);
      return out;
    }
    const Eigen::Index m_i = options.samples_per_peer;
    out.samples.features.resize(n_peers * m_i, options.dim);
    out.samples.labels.resize(n_peers * m_i);
    for (int i = 0; i < n_peers; ++i) {
      const Dataset shard = synthetic_shard(options, i, n_peers, seed, stop);
      out.samples.features.middleRows(i * m_i, m_i) = shard.features;
      out.samples.labels.segment(i * m_i, m_i) = shard.labels;
    }
    out.weights = Eigen::VectorXd::Constant(n_peers * m_i, 1.0 / m_total);
    return out;
  }

  Dataset read;
  if (given == nullptr)
    read = keep_first(read_libsvm(options.data_path, options.data_dim, "--data", stop), options.data_limit);
  const Dataset& data = given != nullptr ? *given : read;
  out.l2 = 1.0 / data.samples();
  const std::vector<std::vector<int>> shards =
      peer_rows(data.labels, options.split_spec(), n_peers, seed, options.data_path);
  std::vector<int> rows;
  std::vector<double> weights;
  for (int i = 0; i < n_peers; ++i) {
    if (peer != pooled && i != peer) continue;
    const std::vector<int>& block = shards[static_cast<std::size_t>(i)];
    const double share = 1.0 / static_cast<double>(block.size()) / (peer == pooled ? n_peers : 1);
    rows.insert(rows.end(), block.begin(), block.end());
    weights.insert(weights.end(), block.size(), share);
  }
  out.samples = select_rows(data, rows, stop);
  out.weights = Eigen::Map<const Eigen::VectorXd>(weights.data(), static_cast<Eigen::Index>(weights.size()));
  return out;
}

}  // namespace

// ---- names ----------------------------------------------------------------------

ObjectiveKind parse_objective_kind(std::string_view name) { return kObjectiveKindNames.parse(name); }

QuadraticPreset parse_quadratic_preset(std::string_view name) { return kQuadraticPresetNames.parse(name); }

DataSplit parse_data_split(std::string_view name) { return kDataSplitNames.parse(name); }

std::string_view to_string(ObjectiveKind kind) { return kObjectiveKindNames.name(kind); }
std::string_view to_string(QuadraticPreset preset) { return kQuadraticPresetNames.name(preset); }
std::string_view to_string(DataSplit split) { return kDataSplitNames.name(split); }

std::optional<Curvature> quadratic_curvature(const ObjectiveOptions& options, int n_peers) {
  check_peer(pooled, n_peers);
  if (options.kind != ObjectiveKind::quadratic) return std::nullopt;
  if (options.preset == QuadraticPreset::conditioned) {  // the same A for every peer
    const double a = quadratic_diagonal(options, 0, n_peers).maxCoeff();
    return Curvature{a * a, a * a};
  }
  // EPFL: every coordinate alike; peer N's (i/sqrt N)^2 = N is the largest.
  double sum = 0.0;
  for (int i = 0; i < n_peers; ++i) sum += epfl_scale(i, n_peers) * epfl_scale(i, n_peers);
  const double last = epfl_scale(n_peers - 1, n_peers);
  return Curvature{last * last, sum / n_peers};
}

// ---- Objective ------------------------------------------------------------------

void Objective::check_sizes(const ConstVector& x, const Vector* g) const {
  if (x.size() != dim() || (g != nullptr && g->size() != dim()))
    throw std::invalid_argument("objective: vectors of length " + std::to_string(x.size()) + " and " +
                                std::to_string(g != nullptr ? g->size() : x.size()) + " for dimension " +
                                std::to_string(dim()));
}

// ---- quadratic ------------------------------------------------------------------

QuadraticObjective::QuadraticObjective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed)
    : Objective((check_peer(peer, n_peers), counter_peer_of(peer, n_peers))), gradient_noise_(options.gradient_noise) {
  const int first = peer == pooled ? 0 : peer;
  const int members = peer == pooled ? n_peers : 1;
  diagonals_.resize(options.dim, members);
  targets_.resize(options.dim, members);
  for (int j = 0; j < members; ++j) {
    diagonals_.col(j) = quadratic_diagonal(options, first + j, n_peers);
    targets_.col(j) = quadratic_target(options, first + j, seed);
  }
}

QuadraticObjective::QuadraticObjective(Eigen::MatrixXd diagonals, Eigen::MatrixXd targets, double gradient_noise,
                                       std::uint64_t counter_peer)
    : Objective(counter_peer),
      diagonals_(std::move(diagonals)),
      targets_(std::move(targets)),
      gradient_noise_(gradient_noise) {
  if (diagonals_.rows() != targets_.rows() || diagonals_.cols() != targets_.cols() || diagonals_.cols() < 1)
    throw std::invalid_argument("QuadraticObjective: diagonals and targets must have the same non-empty shape");
}

double QuadraticObjective::loss(const ConstVector& x) const {
  check_sizes(x, nullptr);
  const Eigen::ArrayXXd residual = diagonals_.array().colwise() * x.array() - targets_.array();
  return 0.5 * residual.square().sum() / static_cast<double>(diagonals_.cols());
}

void QuadraticObjective::gradient(const ConstVector& x, Vector g) const {
  check_sizes(x, &g);
  const Eigen::ArrayXXd residual = diagonals_.array().colwise() * x.array() - targets_.array();
  g = (diagonals_.array() * residual).rowwise().sum().matrix() / static_cast<double>(diagonals_.cols());
}

void QuadraticObjective::stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                                             Vector g) const {
  check_batch(batch);
  gradient(x, g);
  if (gradient_noise_ == 0.0) return;
  const Stream stream(seed, StreamId::sgd_noise);
  const double scale = gradient_noise_ / std::sqrt(static_cast<double>(dim()) * batch);
  for (Eigen::Index k = 0; k < g.size(); ++k)
    g[k] += scale * stream.normal(step, counter_peer(), static_cast<std::uint64_t>(k));
}

Eigen::MatrixXd QuadraticObjective::normal_matrix() const { return normal_matrix_diagonal().asDiagonal(); }

Eigen::VectorXd QuadraticObjective::normal_matrix_diagonal() const {
  return diagonals_.array().square().rowwise().sum().matrix();
}

Eigen::VectorXd QuadraticObjective::normal_rhs() const {
  return (diagonals_.array() * targets_.array()).rowwise().sum().matrix();
}

// ---- logistic -------------------------------------------------------------------

LogisticObjective::LogisticObjective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                                     const Dataset* data, const std::atomic<bool>* stop)
    : Objective((check_peer(peer, n_peers), counter_peer_of(peer, n_peers))) {
  WeightedSamples s = logistic_samples(options, peer, n_peers, seed, data, stop);
  samples_ = std::move(s.samples);
  weights_ = std::move(s.weights);
  l2_ = s.l2;
}

LogisticObjective::LogisticObjective(Dataset samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer)
    : Objective(counter_peer), samples_(std::move(samples)), weights_(std::move(weights)), l2_(l2) {
  if (samples_.samples() < 1 || samples_.labels.size() != samples_.samples() || weights_.size() != samples_.samples())
    throw std::invalid_argument("LogisticObjective: samples, labels and weights must have the same non-zero count");
}

double LogisticObjective::loss(const ConstVector& x) const {
  check_sizes(x, nullptr);
  const Eigen::VectorXd margins = samples_.features * x;
  double sum = 0.0;
  for (Eigen::Index s = 0; s < margins.size(); ++s) sum += weights_[s] * log1p_exp(-samples_.labels[s] * margins[s]);
  return sum + 0.5 * l2_ * x.squaredNorm();
}

void LogisticObjective::gradient(const ConstVector& x, Vector g) const {
  check_sizes(x, &g);
  Eigen::VectorXd coefficients = samples_.features * x;
  for (Eigen::Index s = 0; s < coefficients.size(); ++s) {
    const double y = samples_.labels[s];
    coefficients[s] = -weights_[s] * y * sigmoid(-y * coefficients[s]);
  }
  g.noalias() = samples_.features.transpose() * coefficients;
  g += l2_ * x;
}

void LogisticObjective::stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                                            Vector g) const {
  check_sizes(x, &g);
  check_batch(batch);
  const Stream stream(seed, StreamId::sgd_noise);
  const auto m = static_cast<std::uint64_t>(samples_.samples());
  const double scale = static_cast<double>(m) / batch;
  g = l2_ * x;
  for (int b = 0; b < batch; ++b) {
    const auto s = static_cast<Eigen::Index>(stream.below(m, step, counter_peer(), static_cast<std::uint64_t>(b)));
    const double y = samples_.labels[s];
    const double margin = samples_.features.row(s).dot(x);
    g += (-scale * weights_[s] * y * sigmoid(-y * margin)) * samples_.features.row(s).transpose();
  }
}

std::unique_ptr<Objective> make_objective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                                          const Dataset* data, const std::atomic<bool>* stop) {
  if (options.kind == ObjectiveKind::quadratic)
    return std::make_unique<QuadraticObjective>(options, peer, n_peers, seed);
  if (classifies_images(options.kind)) {
    check_peer(peer, n_peers);
    ImageSet images = read_training_images(options, stop);
    const ImageModel model(options, images.dim(), images.classes, seed);
    if (peer == pooled) return image_pooled(model, options, std::move(images), n_peers, seed);
    return image_peer(model, options, images, peer, n_peers, seed);
  }
  return std::make_unique<LogisticObjective>(options, peer, n_peers, seed, data, stop);
}

// ---- data -----------------------------------------------------------------------

Dataset synthetic_shard(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                        const std::atomic<bool>* stop) {
  check_peer(peer, n_peers);
  if (peer == pooled) throw std::invalid_argument("synthetic_shard: a shard belongs to one peer");
  const Stream stream(seed, StreamId::data);
  const int d = options.dim;
  const int m = options.samples_per_peer;

  // The direction is keyed by peer word 0 for everyone: one problem, not N.
  Eigen::VectorXd direction(d);
  for (int k = 0; k < d; ++k) direction[k] = stream.normal(draw_direction, 0, static_cast<std::uint64_t>(k));
  if (direction.norm() > 0.0)
    direction.normalize();
  else
    direction[0] = 1.0;

  const double majority = peer % 2 == 0 ? 1.0 : -1.0;
  const long long majority_count = std::llround(m * (1.0 + options.label_skew) / 2.0);
  Dataset shard;
  shard.features.resize(m, d);
  shard.labels.resize(m);
  const auto p = static_cast<std::uint64_t>(peer);
  for (int j = 0; j < m; ++j) {
    if ((j & 1023) == 0) check_stop(stop);
    const double y = j < majority_count ? majority : -majority;
    shard.labels[j] = y;
    for (int k = 0; k < d; ++k) {
      const auto draw = static_cast<std::uint64_t>(j) * static_cast<std::uint64_t>(d) + static_cast<std::uint64_t>(k);
      shard.features(j, k) = y * options.separation * direction[k] + stream.normal(draw_features, p, draw);
    }
  }
  return shard;
}

Dataset select_rows(const Dataset& data, const std::vector<int>& rows, const std::atomic<bool>* stop) {
  Dataset out;
  out.features.resize(static_cast<Eigen::Index>(rows.size()), data.dim());
  out.labels.resize(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if ((r & 4095) == 0) check_stop(stop);
    const auto e = static_cast<Eigen::Index>(r);
    out.features.row(e) = data.features.row(rows[r]);
    out.labels[e] = data.labels[rows[r]];
  }
  return out;
}

double log1p_exp(double z) {
  // For z > 0, log(1 + e^z) = z + log(1 + e^-z): no overflow, and log1p keeps
  // the tiny tail exact where 1 + e^z would round to 1.
  return z > 0.0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
}

double sigmoid(double z) {
  if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);  // in (0, 1): e / (1 + e) cannot overflow
  return e / (1.0 + e);
}

}  // namespace avb
