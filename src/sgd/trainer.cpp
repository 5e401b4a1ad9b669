#include "sgd/trainer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <sstream>

#include "core/comm.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/reduce.hpp"
#include "core/rng.hpp"
#include "sim/churn.hpp"
#include "sim/compute.hpp"
#include "run/averaging.hpp"  // trial_seed: trial k of a training run has averaging's trial-k seed

namespace avb {

LocalStepsDist parse_local_steps_dist(std::string_view name) { return kLocalStepsDistNames.parse(name); }

std::string_view to_string(LocalStepsDist dist) { return kLocalStepsDistNames.name(dist); }

// Geometric: P(k) = p(1 - p)^(k - 1), p = 1/H, by inversion of one keyed uniform.
int local_steps_before(const TrainingOptions& o, std::uint64_t seed, int me, int r) {
  if (o.local_steps_dist == LocalStepsDist::fixed || o.local_steps == 1) return o.local_steps;
  const double u = Stream(seed, StreamId::local_steps)
                       .uniform_open0(static_cast<std::uint64_t>(r), static_cast<std::uint64_t>(me), 0);
  const double k = 1.0 + std::floor(std::log(u) / std::log1p(-1.0 / o.local_steps));
  return static_cast<int>(std::min(k, 1e9));
}

LrSchedule parse_lr_schedule(std::string_view name) { return kLrScheduleNames.parse(name); }

std::string_view to_string(LrSchedule schedule) { return kLrScheduleNames.name(schedule); }

double LearningRate::at(std::int64_t step) const {
  const double t = static_cast<double>(step), T = static_cast<double>(decay_steps);
  switch (schedule) {
    case LrSchedule::constant: return lr;
    case LrSchedule::inverse: return lr * T / (t + T);
    case LrSchedule::step: return lr * std::pow(decay_factor, static_cast<double>(step / decay_steps));
  }
  return lr;
}

namespace {


void require(bool ok, const std::string& flag, double value, const std::string& accepted) {
  if (!ok) throw ConfigError(flag + ": " + format_number(value) + " is not " + accepted);
}


}  // namespace

TrainingOptions resolve(const TrainingOptions& options, int n_peers) {
  TrainingOptions r = options;
  r.protocol = resolve(options.protocol, n_peers);
  r.objective = resolve(options.objective, n_peers);
  require(r.fail_rate >= 0.0 && r.fail_rate <= 1.0, "--fail-rate", r.fail_rate, "a number in [0, 1]");
  require(r.steps >= 0, "--steps", r.steps, "an integer >= 0");
  require(r.local_steps >= 1, "--local-steps", r.local_steps, "an integer >= 1");
  if (r.local_steps_dist == LocalStepsDist::geometric && !protocol_info(r.protocol.name).asynchronous)
    throw ConfigError("--local-steps-dist: geometric needs --protocol swarm (the other protocols' rounds are "
                      "collective: every peer must reach them after the same number of steps)");
  validate(r.stragglers);
  check_churn(r.failure, r.join_rate);
  check_failure_support(r.protocol.name, r.failure, true);
  if (r.failure == FailureKind::churn && r.local_steps_dist == LocalStepsDist::geometric)
    throw ConfigError("--failure churn: needs --local-steps-dist fixed (a joiner and its donor must reach the "
                      "round together)");
  require(r.detection_timeout >= 0.0 && std::isfinite(r.detection_timeout), "--detection-timeout",
          r.detection_timeout, "a number >= 0 (seconds)");
  require(r.step_flops >= 0.0 && std::isfinite(r.step_flops), "--step-flops", r.step_flops, "a number >= 0");
  require(r.batch >= 1, "--batch", r.batch, "an integer >= 1");
  require(r.lr.lr > 0.0 && std::isfinite(r.lr.lr), "--lr", r.lr.lr, "a number > 0");
  require(r.lr.decay_steps >= 1, "--lr-decay-steps", r.lr.decay_steps, "an integer >= 1");
  require(r.lr.decay_factor > 0.0 && r.lr.decay_factor <= 1.0, "--lr-decay-factor", r.lr.decay_factor,
          "a number in (0, 1]");
  require(r.momentum >= 0.0 && r.momentum < 1.0, "--momentum", r.momentum, "a number in [0, 1)");
  require(r.eval_every >= 1, "--eval-every", r.eval_every, "an integer >= 1");
  require(r.trials >= 1, "--trials", r.trials, "an integer >= 1");
  if (r.targets.empty()) throw ConfigError("--target: at least one target is needed (a number > 0)");
  for (double t : r.targets) require(t > 0.0 && std::isfinite(t), "--target", t, "a number > 0");
  std::sort(r.targets.begin(), r.targets.end(), std::greater<>());
  r.targets.erase(std::unique(r.targets.begin(), r.targets.end()), r.targets.end());
  if (!r.test_data.empty() && (r.objective.kind != ObjectiveKind::logistic || r.objective.data_path.empty()))
    throw ConfigError("--test-data: applies to --objective logistic with --data only (synthetic data has its own "
                      "held-out set)");
  return r;
}

void check_simulated_time(const TrainingOptions& o, double slowest_speed) {
  const double steps = static_cast<double>(o.steps) * o.trials;
  // Rounds come after H steps, or after at least one with geometric H.
  const double rounds = o.local_steps_dist == LocalStepsDist::fixed
                            ? std::ceil(static_cast<double>(o.steps) / o.local_steps) * o.trials
                            : steps;
  SimulatedTimeBudget b;
  b.computations = steps;
  b.flops = o.step_flops;
  b.flops_flag = "--step-flops";
  b.slowdown = o.stragglers.fraction > 0 ? o.stragglers.slowdown : 1.0;
  b.slowest_speed = slowest_speed;
  b.waits = o.fail_rate > 0 ? rounds : 0.0;
  b.detection_timeout = o.detection_timeout;
  b.counts = "--steps " + std::to_string(o.steps) + " x --trials " + std::to_string(o.trials);
  check_simulated_time(b);
}

std::vector<std::pair<std::string, std::string>> describe(const TrainingOptions& o) {
  auto out = describe(o.protocol);
  for (auto& kv : describe(o.objective)) out.push_back(std::move(kv));
  out.emplace_back("fail-rate", format_number(o.fail_rate));
  out.emplace_back("failure", std::string(to_string(o.failure)));
  if (o.failure == FailureKind::churn) out.emplace_back("join-rate", format_number(o.join_rate));
  for (auto& kv : describe(o.stragglers)) out.push_back(std::move(kv));
  out.emplace_back("detection-timeout", format_number(o.detection_timeout));
  out.emplace_back("steps", std::to_string(o.steps));
  out.emplace_back("local-steps", std::to_string(o.local_steps));
  out.emplace_back("local-steps-dist", std::string(to_string(o.local_steps_dist)));
  out.emplace_back("step-flops", format_number(o.step_flops));
  out.emplace_back("batch", std::to_string(o.batch));
  out.emplace_back("lr", format_number(o.lr.lr));
  out.emplace_back("lr-schedule", std::string(to_string(o.lr.schedule)));
  out.emplace_back("lr-decay-steps", std::to_string(o.lr.decay_steps));
  out.emplace_back("lr-decay-factor", format_number(o.lr.decay_factor));
  out.emplace_back("momentum", format_number(o.momentum));
  out.emplace_back("eval-every", std::to_string(o.eval_every));
  out.emplace_back("trials", std::to_string(o.trials));
  out.emplace_back("seed", std::to_string(o.seed));
  std::string targets;
  for (double t : o.targets) targets += (targets.empty() ? "" : ",") + format_number(t);
  out.emplace_back("target", targets);
  out.emplace_back("stop-at-target", o.stop_at_target ? "true" : "false");
  if (!o.test_data.empty()) out.emplace_back("test-data", o.test_data);
  return out;
}

// ---- the problem -----------------------------------------------------------------

namespace {

constexpr int kShardTag = 7301;
constexpr int kTestSamples = 4096;

// Runs `work` on rank 0 and turns a ConfigError there into the same ConfigError
// on every rank, so that all ranks leave together and only rank 0 need speak.
template <class F>
void on_root_or_throw_everywhere(MPI_Comm world, int rank, F&& work) {
  std::string problem;
  int kind = 0;  // 0 fine, 1 ConfigError, 2 other error, 3 out of memory
  if (rank == 0) {
    try {
      work();
    } catch (const ConfigError& e) {
      problem = e.what();
      kind = 1;
    } catch (const std::bad_alloc& e) {
      // Kept a bad_alloc, so that the app can tell the user the problem is too big.
      problem = e.what();
      kind = 3;
    } catch (const std::exception& e) {
      problem = e.what();
      kind = 2;
    }
  }
  int header[2] = {kind, static_cast<int>(problem.size())};
  check_mpi(MPI_Bcast(header, 2, MPI_INT, 0, world), "MPI_Bcast");
  if (header[0] == 0) return;
  problem.resize(static_cast<std::size_t>(header[1]));
  check_mpi(MPI_Bcast(problem.data(), header[1], MPI_CHAR, 0, world), "MPI_Bcast");
  if (header[0] == 1) throw ConfigError(problem);
  if (header[0] == 3) throw std::bad_alloc();
  throw Error(problem);
}

// The optimum and the loss at x = 0 are the reference of every measurement: a
// problem whose numbers do not fit in double precision is refused as bad input
// (ConfigError, so every engine reports it once, exit 2), naming the flag that
// scales the problem. Any values would fail on every rank alike.
void check_optimum(const ObjectiveOptions& o, const Optimum& optimum, double initial_loss) {
  const bool finite = std::isfinite(initial_loss) && std::isfinite(optimum.loss) && optimum.x.allFinite();
  if (finite && optimum.converged) return;
  std::string flag;
  if (o.kind == ObjectiveKind::quadratic) {
    flag = o.preset == QuadraticPreset::conditioned && o.condition > 1e8
               ? "--condition: " + format_number(o.condition)
               : "--zeta: " + format_number(o.heterogeneity);
  } else {
    flag = o.data_path.empty() ? "--separation: " + format_number(o.separation) : "--data: " + o.data_path;
  }
  std::ostringstream s;
  s << flag << ": the pooled problem's optimum cannot be computed in double precision (";
  if (!finite) {
    s << "its loss or minimiser overflows: f(0) = " << initial_loss << ", f* = " << optimum.loss;
  } else {
    s << "gradient norm " << optimum.gradient_norm << " at the computed x*, above " << kOptimumTolerance
      << " x its scale " << optimum.gradient_scale << ", after ";
    if (o.kind == ObjectiveKind::quadratic)
      s << "the direct solve of the diagonal normal equations";
    else
      s << optimum.iterations << " Newton iterations";
  }
  s << "); use a smaller value";
  throw ConfigError(s.str());
}

// The samples of one peer as rows of (label, features), for one message.
std::vector<double> pack(const Dataset& d) {
  std::vector<double> out;
  out.reserve(static_cast<std::size_t>(d.samples()) * static_cast<std::size_t>(d.dim() + 1));
  for (int s = 0; s < d.samples(); ++s) {
    out.push_back(d.labels[s]);
    for (int k = 0; k < d.dim(); ++k) out.push_back(d.features(s, k));
  }
  return out;
}

Dataset unpack(const std::vector<double>& in, int dim) {
  const auto width = static_cast<std::size_t>(dim + 1);
  const auto m = static_cast<Eigen::Index>(in.size() / width);
  Dataset d;
  d.features.resize(m, dim);
  d.labels.resize(m);
  for (Eigen::Index s = 0; s < m; ++s) {
    const double* row = in.data() + static_cast<std::size_t>(s) * width;
    d.labels[s] = row[0];
    for (int k = 0; k < dim; ++k) d.features(s, k) = row[k + 1];
  }
  return d;
}

}  // namespace

std::unique_ptr<LogisticObjective> logistic_peer(const ObjectiveOptions& options, const Dataset& data, int peer,
                                                 int n_peers, std::uint64_t seed) {
  Dataset shard = select_rows(data, shard_rows(data, options.split, peer, n_peers, seed, options.data_path));
  const Eigen::Index m = shard.samples();
  Eigen::VectorXd weights = Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m));
  return std::make_unique<LogisticObjective>(std::move(shard), std::move(weights), 1.0 / data.samples(),
                                             static_cast<std::uint64_t>(peer));
}

Problem build_problem(const TrainingOptions& raw, MPI_Comm world) {
  int rank = 0, n = 1;
  check_mpi(MPI_Comm_rank(world, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(world, &n), "MPI_Comm_size");
  const TrainingOptions options = resolve(raw, n);
  const ObjectiveOptions& o = options.objective;
  const std::uint64_t seed = options.seed;
  Problem p;

  if (o.kind == ObjectiveKind::logistic && !o.data_path.empty()) {
    // Rank 0 reads the file and deals the shards; the others wait for theirs.
    Dataset data;
    on_root_or_throw_everywhere(world, rank, [&] {
      data = read_libsvm(o.data_path, o.data_dim);
      shard_rows(data, o.split, 0, n, seed, o.data_path);  // enough samples for every peer?
      if (!options.test_data.empty()) {
        p.test = read_libsvm(options.test_data, data.dim(), "--test-data");
        p.test_set_kind = "file";
      } else {
        p.test_set_kind = "train";
      }
    });
    // Every rank needs the dimension and, for the l2 weight 1/m, the total count.
    std::int64_t shape[2] = {rank == 0 ? data.dim() : 0, rank == 0 ? data.samples() : 0};
    check_mpi(MPI_Bcast(shape, 2, MPI_INT64_T, 0, world), "MPI_Bcast");
    if (rank == 0) {
      for (int peer = 1; peer < n; ++peer) {
        const std::vector<double> packed = pack(logistic_peer(o, data, peer, n, seed)->samples());
        check_mpi(MPI_Send(packed.data(), static_cast<int>(packed.size()), MPI_DOUBLE, peer, kShardTag, world),
                  "MPI_Send");
      }
      p.local = logistic_peer(o, data, 0, n, seed);
      p.pooled = make_objective(o, pooled, n, seed, &data);
      if (!p.test) p.test = std::move(data);  // no test file: accuracy on the training set
    } else {
      MPI_Status status;
      check_mpi(MPI_Probe(0, kShardTag, world, &status), "MPI_Probe");
      int count = 0;
      check_mpi(MPI_Get_count(&status, MPI_DOUBLE, &count), "MPI_Get_count");
      std::vector<double> packed(static_cast<std::size_t>(count));
      check_mpi(MPI_Recv(packed.data(), count, MPI_DOUBLE, 0, kShardTag, world, MPI_STATUS_IGNORE), "MPI_Recv");
      // Rebuilt with logistic_peer's weights: the objective rank 0 would build.
      Dataset shard = unpack(packed, static_cast<int>(shape[0]));
      const Eigen::Index m = shard.samples();
      p.local = std::make_unique<LogisticObjective>(std::move(shard),
                                                    Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m)),
                                                    1.0 / static_cast<double>(shape[1]),
                                                    static_cast<std::uint64_t>(rank));
    }
  } else {
    p.local = make_objective(o, rank, n, seed);
    if (rank == 0) {
      p.pooled = make_objective(o, pooled, n, seed);
      if (o.kind == ObjectiveKind::logistic) {
        // A peer no one has (peer N of N + 1): same classes, fresh samples, balanced.
        ObjectiveOptions held_out = o;
        held_out.label_skew = 0.0;
        held_out.samples_per_peer = kTestSamples;
        p.test = synthetic_shard(held_out, n, n + 1, seed);
        p.test_set_kind = "synthetic-held-out";
      }
    }
  }

  // The optimum on rank 0; every rank gets x* (the measurements' reference).
  on_root_or_throw_everywhere(world, rank, [&] {
    p.optimum = find_optimum(*p.pooled);
    p.initial_loss = p.pooled->loss(Eigen::VectorXd::Zero(p.pooled->dim()));
    check_optimum(o, p.optimum, p.initial_loss);
  });
  const int d = p.local->dim();
  if (rank != 0) p.optimum.x = Eigen::VectorXd::Zero(d);
  check_mpi(MPI_Bcast(p.optimum.x.data(), d, MPI_DOUBLE, 0, world), "MPI_Bcast");
  return p;
}

// ---- the run ---------------------------------------------------------------------

TargetResult steps_to_target(const std::vector<TrainingRow>& rows, double target) {
  TargetResult result{target, rows.empty() ? 0 : rows.back().step, false};
  for (const TrainingRow& row : rows)
    if (row.relative_gap <= target) return {target, row.step, true};
  return result;
}

namespace {


// f(x) - f* for the pooled problem. For a quadratic the exact form
// 1/2 (x - x*)^T H (x - x*) keeps the gap accurate far below f*'s rounding
// (the difference of two losses bottoms out near 1e-16 * f*).
class GapEvaluator {
 public:
  GapEvaluator(const Objective& pooled, const Optimum& optimum, double initial_loss)
      : pooled_(pooled), optimum_(optimum), initial_gap_(initial_loss - optimum.loss) {
    if (const auto* q = dynamic_cast<const QuadraticObjective*>(&pooled)) {
      hessian_diagonal_ = q->diagonals().array().square().rowwise().mean();
    }
    // x_0 = 0: the initial gap by the same formula as every later one.
    if (hessian_diagonal_.size() > 0) initial_gap_ = gap(Eigen::VectorXd::Zero(pooled.dim()), -optimum.x);
  }

  double loss(const Eigen::VectorXd& x) const { return pooled_.loss(x); }
  // `offset` = x - x*.
  double gap(const Eigen::VectorXd& x, const Eigen::VectorXd& offset) const {
    if (hessian_diagonal_.size() > 0) return 0.5 * (hessian_diagonal_.array() * offset.array().square()).sum();
    return pooled_.loss(x) - optimum_.loss;
  }
  double initial_gap() const { return initial_gap_; }

 private:
  const Objective& pooled_;
  const Optimum& optimum_;
  Eigen::VectorXd hessian_diagonal_;
  double initial_gap_;
};

// One reduction per evaluation on a communicator of its own (see trainer.hpp).
class TrainingMeter {
 public:
  void set_watch(Watch* watch) { comm_.set_watch(watch); }
  TrainingMeter(MPI_Comm world, const Problem& problem)
      : comm_(Comm::duplicate(world)),
        dim_(static_cast<std::size_t>(problem.local->dim())),
        problem_(problem),
        buffer_(2 * dim_ + kExtra),
        scratch_(buffer_.size()) {
    if (comm_.rank() == 0) gaps_ = std::make_unique<GapEvaluator>(*problem.pooled, problem.optimum, problem.initial_loss);
  }

  struct Inputs {
    const Eigen::VectorXd& x;
    std::uint64_t bytes_sent;
    GroupCounters counters;  // since the previous evaluation
    double detection_seconds;  // failure detection charged to this peer, cumulative
    double start, end;       // MPI_Wtime() when this peer began and ended the interval
    bool stop_requested;
  };
  struct Outputs {
    TrainingRow row;        // rank 0 (step, round, alive, time are the caller's)
    double seconds = 0;     // the interval's duration, rank 0
    double relative_gap;    // all ranks
    bool stop;              // all ranks
    bool diverged;          // all ranks: the model is NaN or infinite somewhere
  };

  Outputs measure(const Inputs& in) {
    const double n = static_cast<double>(comm_.size());
    double squares = 0.0;
    for (std::size_t k = 0; k < dim_; ++k) {
      const auto e = static_cast<Eigen::Index>(k);
      buffer_[k] = in.x[e] - problem_.optimum.x[e];
      buffer_[dim_ + k] = in.x[e];
      squares += buffer_[k] * buffer_[k];
    }
    const std::size_t m = 2 * dim_;
    buffer_[m + 0] = squares;
    buffer_[m + 1] = static_cast<double>(in.bytes_sent);
    buffer_[m + 2] = in.counters.groups;
    buffer_[m + 3] = in.counters.failed_groups;
    buffer_[m + 4] = in.counters.decode_failures;
    buffer_[m + 5] = in.end - in.start;  // maxima from here on
    buffer_[m + 6] = in.start;
    buffer_[m + 7] = in.end;
    buffer_[m + 8] = in.stop_requested ? 1.0 : 0.0;
    buffer_[m + 9] = in.detection_seconds;
    tree_reduce_to_root(comm_, buffer_, m + 5, scratch_);

    Outputs out{};
    std::array<double, 3> verdict{};
    if (comm_.rank() == 0) {
      // Two sums: sum_i (x_i - x*) gives distance, gap and consensus to rounding
      // of the distance to x*; sum_i x_i gives the model itself, which must be
      // exactly 0 when every x_i is (accuracy takes signs of a^T x).
      Eigen::VectorXd offset(static_cast<Eigen::Index>(dim_)), mean(static_cast<Eigen::Index>(dim_));
      for (std::size_t k = 0; k < dim_; ++k) {
        offset[static_cast<Eigen::Index>(k)] = buffer_[k] / n;
        mean[static_cast<Eigen::Index>(k)] = buffer_[dim_ + k] / n;
      }
      TrainingRow& row = out.row;
      row.distance = offset.squaredNorm();
      // Rounding can take the difference below 0; a diverged run's NaN must stay NaN.
      const double consensus = buffer_[m] / n - row.distance;
      row.consensus = consensus < 0.0 ? 0.0 : consensus;
      row.loss = gaps_->loss(mean);
      row.gap = gaps_->gap(mean, offset);
      row.relative_gap = gaps_->initial_gap() > 0 ? row.gap / gaps_->initial_gap() : 0.0;
      row.accuracy = problem_.test ? accuracy(*problem_.test, mean) : std::numeric_limits<double>::quiet_NaN();
      row.bytes_sent = static_cast<std::uint64_t>(buffer_[m + 1]);
      row.groups = static_cast<std::int32_t>(buffer_[m + 2]);
      row.failed_groups = static_cast<std::int32_t>(buffer_[m + 3]);
      row.decode_failures = static_cast<std::int32_t>(buffer_[m + 4]);
      row.detection_time = buffer_[m + 9];
      // As in averaging: from the last peer's start to the last peer's end.
      out.seconds = global_clock_ ? buffer_[m + 7] - buffer_[m + 6] : buffer_[m + 5];
      // A peer's NaN or infinity reaches the sums, and so the measures, of everyone.
      const bool finite = std::isfinite(buffer_[m]) && std::isfinite(row.distance) && std::isfinite(row.loss) &&
                          std::isfinite(row.gap);
      verdict = {row.relative_gap, buffer_[m + 8], finite ? 0.0 : 1.0};
    }
    tree_broadcast_from_root(comm_, verdict);
    out.relative_gap = verdict[0];
    out.stop = verdict[1] != 0.0;
    out.diverged = verdict[2] != 0.0;
    return out;
  }

 private:
  static constexpr std::size_t kExtra = 10;
  Comm comm_;
  std::size_t dim_;
  const Problem& problem_;
  std::vector<double> buffer_, scratch_;
  std::unique_ptr<GapEvaluator> gaps_;  // rank 0 only
  bool global_clock_ = clock_is_global(comm_);
};

}  // namespace

TrainingResult run_training(const TrainingOptions& raw_options, const Problem& problem, MPI_Comm world,
                            TrainingObserver& observer) {
  int n_peers = 0;
  check_mpi(MPI_Comm_size(world, &n_peers), "MPI_Comm_size");
  const TrainingOptions options = resolve(raw_options, n_peers);
  TrainingResult result;
  Watch watch(world, options.round_timeout);
  TrainingMeter meter(world, problem);
  meter.set_watch(&watch);
  const Objective& f = *problem.local;
  const Eigen::Index d = f.dim();
  const double min_target = options.targets.back();

  for (int k = 0; k < options.trials && !result.stopped; ++k) {
    const std::uint64_t seed = trial_seed(options.seed, k);
    watch.start(k, "step", 0);
    Comm comm = Comm::duplicate(world, &watch);
    const int me = comm.rank();
    FailureModel failures(seed, options.fail_rate, options.failure, comm.size(), options.join_rate);
    const double slowdown = Stragglers(seed, options.stragglers).factor(me);
    auto protocol = make_protocol(options.protocol, comm);

    Eigen::VectorXd x = Eigen::VectorXd::Zero(d), velocity = Eigen::VectorXd::Zero(d), g(d);
    protocol->begin_trial(std::span<const double>(x.data(), static_cast<std::size_t>(d)), seed);
    TrainingTrial trial;
    trial.index = k;
    trial.seed = seed;
    double elapsed = 0.0;
    GroupCounters since_eval;
    double detection = 0.0;  // this peer's failure-detection time, cumulative
    int rounds_done = 0;

    auto measure = [&](int step, double start, double end) {
      const auto m =
          meter.measure({x, comm.traffic().bytes_sent, since_eval, detection, start, end, observer.stop_requested()});
      since_eval = {};
      if (me == 0) {
        TrainingRow row = m.row;
        row.step = step;
        row.round = rounds_done;
        elapsed += m.seconds;
        row.time = elapsed;
        row.alive = rounds_done == 0 ? comm.size() : failures.count_alive(rounds_done);
        trial.rows.push_back(row);
        observer.on_eval(trial, row);
      }
      return m;
    };

    double start = MPI_Wtime();
    auto m = measure(0, start, start);
    bool stop = m.stop;
    bool reached = options.stop_at_target && m.relative_gap <= min_target;
    start = MPI_Wtime();
    int done = 0;  // steps run
    // This peer's round r comes after `until` local steps (H, or geometric with mean
    // H); `since` counts the steps taken towards it.
    int r = 1, since = 0, until = local_steps_before(options, seed, me, r);
    bool diverged = false;  // the model became NaN or infinite: the trial ends there
    for (int s = 0; s < options.steps && !stop && !reached && !diverged; ++s) {
      watch.start(k, "step", s + 1);
      // Churn: a new peer joins at the start of the steps that lead to its first
      // round, with a live peer's model and no momentum.
      if (since == 0 && load_joiners(comm, failures, r, std::span<double>(x.data(), static_cast<std::size_t>(d)))) {
        velocity.setZero();
        protocol->on_join(std::span<const double>(x.data(), static_cast<std::size_t>(d)));
      }
      if (failures.alive(r, me)) {
        f.stochastic_gradient(x, options.batch, seed, static_cast<std::uint64_t>(s), g);
        velocity = options.momentum * velocity + g;
        x -= options.lr.at(s) * velocity;
        charge_flops(options.step_flops * slowdown);  // under SMPI: the step's simulated cost on this host
      }
      const std::span<double> model(x.data(), static_cast<std::size_t>(d));
      protocol->progress(model);  // asynchronous protocols: serve partners, publish x
      if (++since == until) {
        GroupCounters counters;
        Round round{r, seed, failures, comm, counters};
        protocol->step(model, round);
        since_eval.groups += counters.groups;
        since_eval.failed_groups += counters.failed_groups;
        since_eval.decode_failures += counters.decode_failures;
        if (counters.waited_on_failure) {  // as in averaging: simulated under SMPI, modelled everywhere
          idle_seconds(options.detection_timeout);
          detection += options.detection_timeout;
        }
        rounds_done = r;
        ++r;
        since = 0;
        until = local_steps_before(options, seed, me, r);
      }
      done = s + 1;
      if ((s + 1) % options.eval_every == 0 || s + 1 == options.steps) {
        protocol->settle(model, since_eval);
        m = measure(s + 1, start, MPI_Wtime());
        stop = m.stop;
        reached = options.stop_at_target && m.relative_gap <= min_target;
        diverged = m.diverged;
        start = MPI_Wtime();
      }
    }
    result.stopped = stop;
    if (me == 0) {
      // A stop seen at the last evaluation cuts nothing short.
      trial.complete = !stop || done == options.steps;
      trial.diverged = diverged;
      for (double target : options.targets) trial.targets.push_back(steps_to_target(trial.rows, target));
      observer.on_trial(trial);
      result.trials.push_back(std::move(trial));
    }
    result.model.assign(x.data(), x.data() + d);
  }
  return result;
}

}  // namespace avb
