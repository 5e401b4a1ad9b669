// The convex test problems of sgd_bench: peer i of N holds f_i, the experiment
// minimises f(x) = (1/N) sum_i f_i(x). Each peer builds its own f_i from (options,
// peer, N, seed) without communication, and any process can build the pooled f
// (peer = avb::pooled) for the optimum or to evaluate the average model.
//
// Keyed randomness (core/rng.hpp): data comes from Stream(seed, data),
// minibatches and gradient noise from Stream(seed, sgd_noise) at counter (step,
// peer, draw). Separate keys let the trainer draw any step in any order without
// shifting the data, and keep results independent of the rank count.
#pragma once

#include <atomic>

#include <Eigen/Dense>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.hpp"
#include "sgd/libsvm.hpp"

namespace avb {

// softmax: multinomial logistic regression on IDX images (sgd/softmax.hpp);
// mlp: a one-hidden-layer perceptron on them (sgd/mlp.hpp).
enum class ObjectiveKind { quadratic, logistic, softmax, mlp };
inline constexpr EnumNames<ObjectiveKind, 4> kObjectiveKindNames{
    "--objective", {{{ObjectiveKind::quadratic, "quadratic"}, {ObjectiveKind::logistic, "logistic"},
                     {ObjectiveKind::softmax, "softmax"}, {ObjectiveKind::mlp, "mlp"}}}};

// The objectives that classify IDX images (--data is an images file).
constexpr bool classifies_images(ObjectiveKind kind) {
  return kind == ObjectiveKind::softmax || kind == ObjectiveKind::mlp;
}

// Quadratic f_i(x) = 1/2 ||A_i x - b_i||^2 with b_i ~ N(0, (zeta^2 / i^2) I), i 1-based.
enum class QuadraticPreset {
  epfl,         // A_i = (i / sqrt(N)) I (Koloskova et al.)
  conditioned,  // A_i = diag(a) for all i, a_k = kappa^((k-1) / (2(d-1))): cond(sum A^T A) = kappa
};
inline constexpr EnumNames<QuadraticPreset, 2> kQuadraticPresetNames{
    "--preset", {{{QuadraticPreset::epfl, "epfl"}, {QuadraticPreset::conditioned, "conditioned"}}}};

// random: i.i.d. shards; sorted by label: CHOCO-SGD's heterogeneous split;
// dirichlet: each class dealt by shares drawn from Dir(alpha) (Hsu et al. 2019),
// from label-sorted-like (small alpha) to i.i.d.-like (large alpha).
enum class DataSplit { random, sorted, dirichlet };
inline constexpr EnumNames<DataSplit, 3> kDataSplitNames{
    "--split", {{{DataSplit::random, "random"}, {DataSplit::sorted, "label-sorted"},
                 {DataSplit::dirichlet, "dirichlet"}}}};

// A split and its parameter (--split, --dirichlet-alpha).
struct SplitSpec {
  DataSplit kind = DataSplit::random;
  double alpha = 0.5;  // dirichlet: the concentration of each class's shares
  SplitSpec(DataSplit k = DataSplit::random, double a = 0.5) : kind(k), alpha(a) {}  // NOLINT: from a DataSplit
};

ObjectiveKind parse_objective_kind(std::string_view name);      // throws ConfigError (--objective)
QuadraticPreset parse_quadratic_preset(std::string_view name);  // throws ConfigError (--preset)
DataSplit parse_data_split(std::string_view name);              // throws ConfigError (--split)
std::string_view to_string(ObjectiveKind kind);
std::string_view to_string(QuadraticPreset preset);
std::string_view to_string(DataSplit split);

// Each kind reads the fields that concern it; comments name the flags that
// resolve() uses in its errors.
struct ObjectiveOptions {
  ObjectiveKind kind = ObjectiveKind::quadratic;  // --objective
  int dim = 10;                                   // --dim (quadratic, synthetic logistic)

  // quadratic
  QuadraticPreset preset = QuadraticPreset::epfl;  // --preset
  double condition = 100.0;                        // --condition: kappa, conditioned preset only
  double heterogeneity = 1.0;                      // --zeta: scale of the b_i
  // --sigma: noise N(0, sigma^2/d I) per sample, so N(0, sigma^2/(d B) I) for a batch of B.
  double gradient_noise = 0.0;

  // logistic: f_i = (1/m_i) sum log(1 + exp(-y a^T x)) + (lambda/2)||x||^2, lambda = 1/m
  // (softmax and mlp: --data, --split, --data-limit and --l2 only; mlp: --hidden)
  std::string data_path;                // --data: a LIBSVM file (softmax: IDX images); empty for synthetic data
  int data_dim = 0;                     // --data-dim: 0 = the largest index in the file
  DataSplit split = DataSplit::random;  // --split (LIBSVM, IDX)
  double dirichlet_alpha = 0.5;         // --dirichlet-alpha (--split dirichlet)
  SplitSpec split_spec() const { return {split, dirichlet_alpha}; }
  long long data_limit = 0;             // --data-limit: train on the first M samples of --data; 0 = all
  // --l2 (softmax): lambda of (lambda/2)||x||^2; 0 = 1/m, m the training samples
  // (the logistic's lambda, and scikit-learn's C = 1).
  double l2 = 0.0;
  int hidden = 128;  // --hidden (mlp): the hidden layer's units
  // Synthetic: unit-covariance Gaussian classes at +-separation * e, e one random
  // unit direction for all peers.
  int samples_per_peer = 100;  // --samples-per-peer
  double separation = 1.0;     // --separation
  // --label-skew s: a share (1 + s)/2 of peer i's samples has label +1 (i even) or
  // -1 (i odd); 0 = balanced shards, 1 = single-label shards.
  double label_skew = 0.0;
};

// Range checks (ConfigError naming the flag). A LIBSVM file's size is checked
// only when it is read.
ObjectiveOptions resolve(const ObjectiveOptions& options, int n_peers);
inline constexpr int kMaxHidden = 1 << 16;  // --hidden's largest value
// The options of the chosen kind, as (key, value) pairs for traces.
std::vector<std::pair<std::string, std::string>> describe(const ObjectiveOptions& options);

// The curvature of a quadratic problem, which its options fix before any data is
// drawn: the largest eigenvalue of any peer's Hessian A_i^2 (`peer`), and of the
// pooled problem's (1/N) sum_i A_i^2 (`pooled`). A logistic problem's depends on
// its data and on where the model is: nullopt.
struct Curvature {
  double peer = 0.0, pooled = 0.0;
};
std::optional<Curvature> quadratic_curvature(const ObjectiveOptions& options, int n_peers);

// The `peer` that builds the pooled (1/N) sum_i f_i. Its draws use peer word N,
// which no real peer has.
inline constexpr int pooled = -1;

// Throws std::invalid_argument when n_peers < 1, std::out_of_range when `peer` is
// neither `pooled` nor in [0, n_peers).
void check_peer(int peer, int n_peers);

// One peer's f_i (or the pooled f). Immutable: safe to share between threads.
class Objective {
 public:
  using ConstVector = Eigen::Ref<const Eigen::VectorXd>;
  using Vector = Eigen::Ref<Eigen::VectorXd>;

  virtual ~Objective() = default;

  virtual int dim() const = 0;
  virtual double loss(const ConstVector& x) const = 0;
  virtual void gradient(const ConstVector& x, Vector g) const = 0;
  // Unbiased estimate of the gradient, a pure function of (x, batch, seed, step,
  // peer). Throws ConfigError ("--batch: ...") for batch < 1.
  virtual void stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                                   Vector g) const = 0;

  // The counter's peer word: the peer, or N for the pooled objective.
  std::uint64_t counter_peer() const { return counter_peer_; }

 protected:
  explicit Objective(std::uint64_t counter_peer) : counter_peer_(counter_peer) {}
  // std::invalid_argument unless x (and g) have length dim(): a caller's bug.
  void check_sizes(const ConstVector& x, const Vector* g) const;

 private:
  std::uint64_t counter_peer_;
};

class QuadraticObjective final : public Objective {
 public:
  // f_i of `peer` in [0, n_peers), or the pooled f for peer == pooled.
  QuadraticObjective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed);
  // Column j holds diag(A_j) and b_j; f = mean over j of 1/2 ||A_j x - b_j||^2.
  // Diagonals, not matrices: a pooled objective of 1024 peers stays small.
  QuadraticObjective(Eigen::MatrixXd diagonals, Eigen::MatrixXd targets, double gradient_noise,
                     std::uint64_t counter_peer);

  int dim() const override { return static_cast<int>(diagonals_.rows()); }
  double loss(const ConstVector& x) const override;
  void gradient(const ConstVector& x, Vector g) const override;
  void stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                           Vector g) const override;

  // x* solves normal_matrix() x = normal_rhs() (sums of A_j^T A_j and A_j^T b_j).
  Eigen::MatrixXd normal_matrix() const;
  Eigen::VectorXd normal_matrix_diagonal() const;  // its diagonal: it is a diagonal matrix
  Eigen::VectorXd normal_rhs() const;

  const Eigen::MatrixXd& diagonals() const { return diagonals_; }
  const Eigen::MatrixXd& targets() const { return targets_; }
  double gradient_noise() const { return gradient_noise_; }

 private:
  Eigen::MatrixXd diagonals_;  // d x members
  Eigen::MatrixXd targets_;    // d x members
  double gradient_noise_;
};

class LogisticObjective final : public Objective {
 public:
  // `data`: the LIBSVM file already read, so that a process holding many peers
  // (SMPI) reads it once; null reads options.data_path. Throws ConfigError
  // ("--data PATH: ...") for a bad file or fewer samples than peers, and
  // StopRequested once `stop` is set while it generates synthetic samples.
  LogisticObjective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                    const Dataset* data = nullptr, const std::atomic<bool>* stop = nullptr);
  // f = sum_s w_s log(1 + exp(-y_s a_s^T x)) + (l2/2)||x||^2. Peers have w = 1/m_i,
  // the pooled objective 1/(N m_i): exactly the mean of f_i for unequal shards.
  LogisticObjective(Dataset samples, Eigen::VectorXd weights, double l2, std::uint64_t counter_peer);

  int dim() const override { return samples_.dim(); }
  double loss(const ConstVector& x) const override;
  void gradient(const ConstVector& x, Vector g) const override;
  // Uniform with replacement; terms scaled by m w_s to stay unbiased for unequal w.
  void stochastic_gradient(const ConstVector& x, int batch, std::uint64_t seed, std::uint64_t step,
                           Vector g) const override;

  double accuracy(const ConstVector& x) const { return avb::accuracy(samples_, x); }

  const Dataset& samples() const { return samples_; }
  const Eigen::VectorXd& weights() const { return weights_; }
  double l2() const { return l2_; }

 private:
  Dataset samples_;
  Eigen::VectorXd weights_;
  double l2_;
};

// `stop` is polled while synthetic samples are generated (StopRequested).
std::unique_ptr<Objective> make_objective(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                                          const Dataset* data = nullptr, const std::atomic<bool>* stop = nullptr);

// ---- data ----------------------------------------------------------------------

// Majority-label rows first. Independent of n_peers, so a peer's data survives a
// change of rank count.
Dataset synthetic_shard(const ObjectiveOptions& options, int peer, int n_peers, std::uint64_t seed,
                        const std::atomic<bool>* stop = nullptr);

// Every peer's rows (sgd/split.cpp). random: block [floor(i m / N), floor((i+1) m
// / N)) of a keyed Fisher-Yates permutation, ascending; label-sorted: that block of
// the rows stably sorted by label, -1 first; dirichlet: each class's rows in a keyed
// order, cut by shares q ~ Dir(alpha) over the peers, ascending (a peer left empty
// takes the last row of the largest shard). Every peer computes the whole split:
// O(m), and no one has to send it. ConfigError ("--data PATH: ...") when there are
// fewer rows than peers.
std::vector<std::vector<int>> peer_rows(const Eigen::VectorXd& labels, const SplitSpec& split, int n_peers,
                                        std::uint64_t seed, const std::string& path_for_errors = "");
// peer_rows' refusal of fewer rows than peers, for the resource estimate to say it
// before the problem is built.
void check_splittable(long long samples, int n_peers, const std::string& path);
// One peer's rows of peer_rows.
std::vector<int> shard_rows(const Dataset& data, const SplitSpec& split, int peer, int n_peers, std::uint64_t seed,
                            const std::string& path_for_errors = "");
// The same by the rows' labels alone (any data set: LIBSVM's -1/+1, IDX classes).
std::vector<int> shard_rows(const Eigen::VectorXd& labels, const SplitSpec& split, int peer, int n_peers,
                            std::uint64_t seed, const std::string& path_for_errors = "");
// Every row's peer under that split.
std::vector<int> row_owners(const Eigen::VectorXd& labels, const SplitSpec& split, int n_peers, std::uint64_t seed,
                            const std::string& path_for_errors = "");

// `rows` of data, in that order; `stop` polled every 4096 rows (a pooled set near
// the dense bound is a gigabyte to copy).
Dataset select_rows(const Dataset& data, const std::vector<int>& rows, const std::atomic<bool>* stop = nullptr);

// Without overflow or cancellation for any finite z.
double log1p_exp(double z);
double sigmoid(double z);

}  // namespace avb
