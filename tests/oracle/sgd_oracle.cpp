#include "sgd_oracle.hpp"

#include <limits>
#include <memory>
#include <optional>

#include "run/averaging.hpp"
#include "sgd/libsvm.hpp"
#include "sgd/optimum.hpp"

namespace avb::oracle {

namespace {

// The objectives of one run: every peer's f_i and the pooled f, keyed by the run's seed.
struct Problem {
  std::optional<Dataset> read;  // the LIBSVM file, when the caller did not pass it
  const Dataset* data = nullptr;
  std::vector<std::unique_ptr<Objective>> peers;
  std::unique_ptr<Objective> pooled;
};

Problem make_problem(const TrainingOptions& options, int n, const Dataset* data) {
  Problem p;
  p.data = data;
  const ObjectiveOptions& o = options.objective;
  if (p.data == nullptr && o.kind == ObjectiveKind::logistic && !o.data_path.empty()) {
    p.read = read_libsvm(o.data_path, o.data_dim);
    p.data = &*p.read;
  }
  for (int i = 0; i < n; ++i) p.peers.push_back(make_objective(o, i, n, options.seed, p.data));
  p.pooled = make_objective(o, avb::pooled, n, options.seed, p.data);
  return p;
}

// The measurements of trainer.hpp, written out from their definitions.
class Meter {
 public:
  Meter(const TrainingOptions& options, int n, const Problem& problem)
      : pooled_(*problem.pooled), optimum_(find_optimum(pooled_)) {
    const int d = pooled_.dim();
    if (const auto* q = dynamic_cast<const QuadraticObjective*>(&pooled_)) {
      // H = (1/N) sum_j diag(A_j)^2: the pooled quadratic's Hessian.
      const Eigen::MatrixXd& a = q->diagonals();
      curvature_.assign(static_cast<std::size_t>(d), 0.0);
      for (int k = 0; k < d; ++k) {
        for (Eigen::Index j = 0; j < a.cols(); ++j) curvature_[k] += a(k, j) * a(k, j);
        curvature_[k] /= static_cast<double>(a.cols());
      }
    } else if (!options.objective.data_path.empty()) {
      if (!options.test_data.empty()) {
        test_ = read_libsvm(options.test_data, problem.data->dim(), "--test-data");
      } else {
        test_ = *problem.data;  // accuracy on the whole training set
      }
    } else {
      ObjectiveOptions held_out = options.objective;
      held_out.label_skew = 0.0;
      held_out.samples_per_peer = 4096;
      test_ = synthetic_shard(held_out, n, n + 1, options.seed);
    }
    initial_gap_ = gap(std::vector<double>(static_cast<std::size_t>(d), 0.0));
  }

  // f(x) - f*; for a quadratic 1/2 (x - x*)^T H (x - x*).
  double gap(const std::vector<double>& x) const {
    if (!curvature_.empty()) {
      double sum = 0.0;
      for (std::size_t k = 0; k < x.size(); ++k) {
        const double e = x[k] - optimum_.x[static_cast<Eigen::Index>(k)];
        sum += curvature_[k] * e * e;
      }
      return 0.5 * sum;
    }
    return loss(x) - optimum_.loss;
  }

  double loss(const std::vector<double>& x) const {
    return pooled_.loss(Eigen::Map<const Eigen::VectorXd>(x.data(), static_cast<Eigen::Index>(x.size())));
  }

  // Share of test samples whose label is the sign of a^T x, sign(0) = -1.
  double accuracy(const std::vector<double>& x) const {
    if (!test_) return std::numeric_limits<double>::quiet_NaN();
    int right = 0;
    for (int s = 0; s < test_->samples(); ++s) {
      double margin = 0.0;
      for (int k = 0; k < test_->dim(); ++k) margin += test_->features(s, k) * x[k];
      const double predicted = margin > 0.0 ? 1.0 : -1.0;
      right += predicted == test_->labels[s] ? 1 : 0;
    }
    return static_cast<double>(right) / static_cast<double>(test_->samples());
  }

  TrainingRow measure(const Matrix& x) const {
    const std::vector<double> x_bar = mean(x);
    TrainingRow row;
    row.loss = loss(x_bar);
    row.gap = gap(x_bar);
    row.relative_gap = initial_gap_ > 0 ? row.gap / initial_gap_ : 0.0;
    for (std::size_t k = 0; k < x_bar.size(); ++k) {
      const double e = x_bar[k] - optimum_.x[static_cast<Eigen::Index>(k)];
      row.distance += e * e;
    }
    for (const auto& xi : x)
      for (std::size_t k = 0; k < x_bar.size(); ++k) row.consensus += (xi[k] - x_bar[k]) * (xi[k] - x_bar[k]);
    row.consensus /= static_cast<double>(x.size());
    row.accuracy = accuracy(x_bar);
    return row;
  }

 private:
  const Objective& pooled_;
  Optimum optimum_;
  std::vector<double> curvature_;  // quadratic only
  std::optional<Dataset> test_;    // logistic only
  double initial_gap_ = 0.0;
};

}  // namespace

TrainingOutcome run_training_trial(const TrainingOptions& raw, int n, int trial, const Dataset* data) {
  const TrainingOptions options = resolve(raw, n);
  const Problem problem = make_problem(options, n, data);
  const Meter meter(options, n, problem);
  const int d = problem.pooled->dim();
  const int H = options.local_steps;
  const std::uint64_t seed = trial_seed(options.seed, trial);
  const FailureModel failures = trial_failures(options, seed, n);
  const double min_target = options.targets.back();

  TrainingOutcome out;
  TrainingTrial& record = out.trial;
  record.index = trial;
  record.seed = seed;
  Matrix& x = out.models;
  x.assign(static_cast<std::size_t>(n), std::vector<double>(static_cast<std::size_t>(d), 0.0));
  Matrix velocity = x;
  TrialState state;
  std::uint64_t bytes = 0;
  int groups = 0, failed_groups = 0, decode_failures = 0, rounds_done = 0;

  auto measure = [&](int step) {
    TrainingRow row = meter.measure(x);
    row.step = step;
    row.round = rounds_done;
    row.alive = rounds_done == 0 ? n : failures.count_alive(rounds_done);
    row.groups = groups;
    row.failed_groups = failed_groups;
    row.decode_failures = decode_failures;
    row.bytes_sent = bytes;
    groups = failed_groups = decode_failures = 0;
    record.rows.push_back(row);
    return options.stop_at_target && row.relative_gap <= min_target;
  };

  bool reached = measure(0);
  Eigen::VectorXd g(d);
  for (int s = 0; s < options.steps && !reached; ++s) {
    const int r = s / H + 1;
    const double lr = options.lr.at(s);
    for (int i = 0; i < n; ++i) {
      if (!failures.alive(r, i)) continue;  // down in round r: sits out the steps before it
      const Eigen::Map<const Eigen::VectorXd> xi(x[i].data(), d);
      problem.peers[i]->stochastic_gradient(xi, options.batch, seed, static_cast<std::uint64_t>(s), g);
      for (int k = 0; k < d; ++k) {
        velocity[i][k] = options.momentum * velocity[i][k] + g[k];
        x[i][k] -= lr * velocity[i][k];
      }
    }
    if ((s + 1) % H == 0) {
      const RoundEffect effect = step(options.protocol, failures, seed, r, x, state);
      groups += effect.groups;
      failed_groups += effect.failed_groups;
      decode_failures += effect.decode_failures;
      bytes += effect.bytes;
      rounds_done = r;
    }
    if ((s + 1) % options.eval_every == 0 || s + 1 == options.steps) reached = measure(s + 1);
  }

  for (double target : options.targets) {
    TargetResult result{target, record.rows.back().step, false};
    for (const TrainingRow& row : record.rows)
      if (row.relative_gap <= target) {
        result = {target, row.step, true};
        break;
      }
    record.targets.push_back(result);
  }
  record.complete = true;
  return out;
}

std::vector<double> centralized_sgd(const TrainingOptions& raw, int n, int trial, const Dataset* data) {
  const TrainingOptions options = resolve(raw, n);
  const Problem problem = make_problem(options, n, data);
  const int d = problem.pooled->dim();
  const std::uint64_t seed = trial_seed(options.seed, trial);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d), velocity = Eigen::VectorXd::Zero(d), g(d), sum(d);
  for (int s = 0; s < options.steps; ++s) {
    sum.setZero();
    for (int i = 0; i < n; ++i) {
      problem.peers[i]->stochastic_gradient(x, options.batch, seed, static_cast<std::uint64_t>(s), g);
      sum += g;
    }
    velocity = options.momentum * velocity + sum / static_cast<double>(n);
    x -= options.lr.at(s) * velocity;
  }
  return {x.data(), x.data() + d};
}

}  // namespace avb::oracle
