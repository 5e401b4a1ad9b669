// problem_cost (sgd/problem.hpp): the memory and time of a training run's problem.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sgd/idx.hpp"
#include "sgd/image_objective.hpp"
#include "sgd/libsvm.hpp"
#include "sgd/optimum.hpp"
#include "sgd/problem.hpp"

namespace avb {

namespace {

// Calibrated on the peak memory and wall time of sequential runs here: an f_i
// object with its matrices and allocation headers; a keyed normal draw
// (core/rng.hpp); a logistic sample's exp and log1p in a pass over the data,
// of which Newton makes about six an iteration.
constexpr double kObjectBytes = 400, kObjectSeconds = 2e-6;
constexpr double kDrawSeconds = 30e-9, kNoiseSeconds = 8e-9, kSampleSeconds = 40e-9;
constexpr double kTypicalNewtonIterations = 8;
// The softmax: seconds per multiply-add of its matrix products (a pass over the
// data is two, of m x d x K each), and the L-BFGS iterations of a typical optimum.
// The MLP's products, h = 128 columns wide rather than K = 10, run near the
// core's peak (bench/mlp_bench.cpp).
constexpr double kProductSeconds = 0.5e-9, kWideProductSeconds = 0.13e-9;
constexpr double kTypicalLbfgsIterations = 1000;
constexpr double kWord = sizeof(double);

struct CostInputs {
  double n = 1, held = 1, d = 1;  // peers, f_i on this machine, --dim
  bool sequential = false;
  const std::atomic<bool>* stop = nullptr;  // a LIBSVM file's read through polls it
};

// The flag behind a product of sizes: its largest factor's (--peers only where
// one process holds every peer).
std::string largest_flag(const CostInputs& in, double m) {
  if (in.sequential && in.n >= m && in.n >= in.d) return "--peers";
  return m > in.d ? "--samples-per-peer" : "--dim";
}

// Returns the seconds of one evaluation (the mean model's measures).
double quadratic_cost(const CostInputs& in, ProblemCost& c) {
  const double n = in.n, d = in.d;
  c.memory.push_back({"f_i of the peers", largest_flag(in, 0), in.held * (2 * d * kWord + kObjectBytes)});
  c.memory.push_back({"pooled problem", largest_flag(in, 0), 2 * d * n * kWord});
  c.setup_seconds = n * (2 * d * kDrawSeconds + kObjectSeconds) + 4 * n * d * 1e-9;
  return n * d * 4e-9;
}

double synthetic_logistic_cost(const ObjectiveOptions& o, const CostInputs& in, ProblemCost& c) {
  const double n = in.n, d = in.d, m = o.samples_per_peer, sample = (d + 2) * kWord, all = n * m;
  c.memory.push_back({"f_i's samples", largest_flag(in, m), in.held * (m * sample + kObjectBytes)});
  // Rank 0 (and the sequential engine): the pooled copy, the held-out set, and
  // Newton's Hessian, its factor and the per-sample coefficients.
  c.memory.push_back({"pooled samples", largest_flag(in, m), all * sample + kHeldOutSamples * sample});
  c.memory.push_back({"Newton's Hessian", "--dim", 3 * d * d * kWord + 2 * all * kWord});
  const double newton = all * (6 * kSampleSeconds + 6 * d * 1e-9 + d * d * 0.15e-9) + d * d * d * 0.15e-9;
  c.setup_seconds = (all + kHeldOutSamples) * d * kDrawSeconds + n * (d * kDrawSeconds + kObjectSeconds) +
                    all * d * 1e-9 + kTypicalNewtonIterations * newton;
  return all * (1.5 * kSampleSeconds + 4 * d * 1e-9) + kHeldOutSamples * (kSampleSeconds + 2 * d * 1e-9);
}

// The multiply-adds of one image through the model (its forward pass), and of
// one image of a stochastic gradient (the forward pass and backpropagation:
// the MLP's gradient in W1 and in W2 and its hidden layer; the softmax's in W).
// Both in seconds; and the seconds per parameter of a step's vector work (the
// update, the L2 term, the MLP's theta_0 + x), calibrated for each.
struct ImageProducts {
  double forward = 0, gradient = 0, per_parameter = 0;
};
ImageProducts image_products(const ObjectiveOptions& o, double d, double k) {
  if (o.kind == ObjectiveKind::mlp) {
    const double h = o.hidden;
    return {(d * h + h * k) * kWideProductSeconds, (2 * d * h + 3 * h * k) * kWideProductSeconds, 2e-9};
  }
  return {d * k * kProductSeconds, 2 * d * k * kProductSeconds, 8e-9};
}

// The IDX files' sizes are in their headers: read here (a bad file is refused
// now, as it would be when the problem is built). Sets the step's seconds.
double image_cost(const TrainingOptions& options, const CostInputs& in, ProblemCost& c, double& step) {
  const ObjectiveOptions& o = options.objective;
  const IdxShape shape = read_idx_shape(o.data_path);
  const double m = o.data_limit > 0 ? std::min<double>(o.data_limit, shape.samples) : shape.samples;
  check_splittable(static_cast<long long>(m), static_cast<int>(in.n), o.data_path);
  const double d = shape.dim, k = shape.classes;
  const double model = static_cast<double>(image_model_dim(o, shape.dim, shape.classes));
  const double test = options.test_data.empty() ? m : read_idx_shape(options.test_data, "--test-data").samples;
  c.model_dim = static_cast<std::size_t>(model);
  c.model_flag = o.kind == ObjectiveKind::mlp ? "--hidden" : "";
  const ImageProducts products = image_products(o, d, k);
  const double image = d + 1;  // pixel bytes and the label
  // The shards: 1/N of the images per f_i; rank 0 (and the sequential engine)
  // also holds them all (the pooled f) and the test set.
  c.memory.push_back({"f_i's images", "--data-limit", in.held * (m / in.n * image + kObjectBytes)});
  c.memory.push_back({"pooled and test images", "--data-limit", (m + test) * image + m * kWord});
  // The split (peer_rows): every row's index, in a list per peer.
  c.memory.push_back({"the split's row lists", "--peers", m * sizeof(int) + in.n * sizeof(std::vector<int>)});
  // A block of rows as doubles with its products and gradient.
  const double block = 2048 * (d + 3 * k + 2 * o.hidden) * kWord + model * kWord;
  const double pass = m * products.gradient + m * (d + 8 * k) * 1e-9;
  c.setup_seconds = (m + test) * image * 5e-9;
  step = 2e-6 + options.batch * products.gradient + model * products.per_parameter;
  if (o.kind == ObjectiveKind::mlp) {
    // theta_0, once per process (sequential) or per rank here; the sums of the
    // evaluation need no solver.
    const double copies = in.sequential ? 1 : in.held;
    c.memory.push_back({"MLP's initial weights", "--hidden", copies * model * kWord + block});
    c.setup_seconds += copies * model * kDrawSeconds;
  } else {
    // L-BFGS's pairs.
    c.memory.push_back({"L-BFGS history", "--data " + o.data_path, (2 * kLbfgsHistory + 6) * model * kWord + block});
    c.setup_seconds += kTypicalLbfgsIterations * pass;
  }
  return (m + test) * products.forward + m * (d + 8 * k) * 1e-9;
}

// A LIBSVM file's shape is read through here (a bad file is refused now, as it
// would be when the problem is built). Rank 0 (and the sequential engine) holds
// the data set as read (the whole file) and its pooled copy (the --data-limit
// rows), the test file's samples, and Newton's Hessian of the optimum, features x
// features; each f_i its rows. Stored dense: a sample is its features, its label
// and its weight. Returns an evaluation's seconds.
double libsvm_cost(const TrainingOptions& options, const CostInputs& in, ProblemCost& c) {
  const ObjectiveOptions& o = options.objective;
  const LibsvmShape shape = read_libsvm_shape(o.data_path, o.data_dim, "--data", in.stop);
  const double m = o.data_limit > 0 ? std::min<double>(static_cast<double>(o.data_limit), shape.samples)
                                    : static_cast<double>(shape.samples);
  check_splittable(static_cast<long long>(m), static_cast<int>(in.n), o.data_path);
  const double d = static_cast<double>(shape.dim);
  const double test = options.test_data.empty()
                          ? 0.0
                          : static_cast<double>(read_libsvm_shape(options.test_data, static_cast<int>(shape.dim),
                                                                  "--test-data", in.stop).samples);
  const double sample = (d + 2) * kWord;
  c.model_dim = static_cast<std::size_t>(shape.dim);
  c.model_flag = "";
  c.memory.push_back({"f_i's samples", "--data-limit", in.held * (m / in.n * sample + kObjectBytes)});
  // The file is read whole, dense, before --data-limit keeps its first rows.
  const double read = static_cast<double>(shape.samples);
  c.memory.push_back({"data set as read plus pooled and test sets", "--data-limit", (read + m + test) * sample});
  c.memory.push_back({"the split's row lists", "--peers", m * sizeof(int) + in.n * sizeof(std::vector<int>)});
  // Named by its file, as the reader's errors are: "--data FILE: the run needs ...".
  c.memory.push_back({"Newton's Hessian", "--data " + o.data_path, 3 * d * d * kWord + 2 * m * kWord});
  const double newton = m * (6 * kSampleSeconds + 6 * d * 1e-9 + d * d * 0.15e-9) + d * d * d * 0.15e-9;
  c.setup_seconds = (m + test) * d * 2e-9 + kTypicalNewtonIterations * newton;
  return m * (1.5 * kSampleSeconds + 4 * d * 1e-9) + test * (kSampleSeconds + 2 * d * 1e-9);
}

}  // namespace

ProblemCost problem_cost(const TrainingOptions& options, int n_peers, bool sequential, int peers_here,
                         bool reads_data, const std::atomic<bool>* stop) {
  const ObjectiveOptions& o = options.objective;
  CostInputs in;
  in.stop = stop;
  in.n = n_peers;
  in.d = o.dim;
  in.sequential = sequential;
  in.held = sequential ? in.n : std::max(1, peers_here);  // f_i on this machine
  ProblemCost c;
  double evaluation = in.n * in.d * 4e-9;  // the mean model and the consensus distance
  double image_step = 0;
  if (o.kind == ObjectiveKind::quadratic) {
    evaluation += quadratic_cost(in, c);
  } else if (classifies_images(o.kind)) {
    evaluation = image_cost(options, in, c, image_step);
    evaluation += in.n * static_cast<double>(c.model_dim) * 4e-9;
  } else if (o.data_path.empty()) {
    evaluation += synthetic_logistic_cost(o, in, c);
  } else if (reads_data) {
    evaluation = libsvm_cost(options, in, c);
    in.d = static_cast<double>(c.model_dim);  // the file's features, not --dim, set the step below
    evaluation += in.n * in.d * 4e-9;
  } else {
    c.model_flag = "";
  }
  if (!sequential) {
    c.setup_seconds = 0;
    return c;
  }
  c.trial_vectors = 3;  // momentum, the measurement's second row (x and x - x*), allocation slack
  if (options.outer.kind != OuterOptimizer::none) c.trial_vectors += 2;  // the anchors, the outer momentum
  if (options.outer.fragments > 1) c.trial_vectors += 1;                  // the fragments' copies
  const double steps = std::max(0, options.steps), d = in.d;
  double step = 100e-9 + options.batch * (60e-9 + 4e-9 * d) + 4e-9 * d;  // logistic
  if (o.kind == ObjectiveKind::quadratic)
    step = 100e-9 + d * (8e-9 + (o.gradient_noise > 0 ? kNoiseSeconds : 0.0));
  else if (classifies_images(o.kind))
    step = image_step;
  const double evaluations = std::floor(steps / std::max(1, options.eval_every)) + 2;
  c.trial_seconds = steps * in.n * step + evaluations * evaluation;
  return c;
}

}  // namespace avb
