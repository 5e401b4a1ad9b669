#include "sgd/sequential_trainer.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "run/sequential.hpp"
#include "sgd/event_sgd.hpp"
#include "run/trial_pool.hpp"
#include "run/tree_sum.hpp"
#include "sgd/metrics.hpp"
#include "core/blocks.hpp"
#include "sgd/outer.hpp"

namespace avb {

namespace {

using PeerVector = Eigen::Map<Eigen::VectorXd>;

// One trial of the trainer's loop (trainer.hpp) on the whole population: step s
// of every peer, then, after H steps, round s / H + 1 of every peer, which is the
// order of the MPI trainer up to the steps of different peers, which are
// independent.
class PopulationSgd {
 public:
  // `step_threads`: threads a local step may use (the cores no other trial has).
  PopulationSgd(const TrainingOptions& options, const Problem& problem, int n, int trial, const std::atomic<bool>* stop,
                const Hosts& hosts, FluidMemo* memo = nullptr, std::atomic<long long>* work = nullptr,
                int step_threads = 1)
      : work_(work), step_threads_(step_threads),
        o_(options), peers_(problem.peers), reference_(problem.optimum.x), metrics_(problem), stop_flag_(stop),
        hosts_(hosts), links_(hosts, n, stop, memo), detection_(n, options.detection_timeout),
        compute_(trial_seed(options.seed, trial), options.stragglers, n, options.step_flops, hosts),
        n_(n), d_(problem.pooled->dim()), seed_(trial_seed(options.seed, trial)),
        failures_(trial_failures(options, seed_, n)),
        protocol_(make_sequential_protocol(options.protocol, n)),
        x_(n, static_cast<int>(options.gradient_tracking ? 2 * d_ : d_)), velocity_(n, d_),
        anchor_(outer() ? n : 0, static_cast<int>(d_)), outer_velocity_(outer() ? n : 0, static_cast<int>(d_)), g_(d_),
        partial_(static_cast<std::size_t>(n) * width()) {
    record_.index = trial;
    record_.seed = seed_;
  }

  PopulationTrial run() && {
    if (EventPeers* peers = protocol_->event_peers()) return std::move(*this).run_events(*peers);
    begin_parts();
    evaluate(0);
    int done = 0;  // steps run
    for (int s = 0; s < o_.steps && !stop_ && !reached_ && !diverged_; ++s) {
      // A stop between evaluations, or inside a step's per-peer loops (millions of
      // peers), ends the trial there: the step is dropped, the rows so far stand.
      if (stop_flag_ != nullptr && stop_flag_->load(std::memory_order_relaxed)) {
        stop_ = true;
        break;
      }
      try {
        const int r = s / o_.local_steps + 1;  // the round these steps lead to
        if (s % o_.local_steps == 0) start_round(r);
        local_step(s);
        if ((s + 1) % o_.local_steps == 0) round(r);
      } catch (const StopRequested&) {
        stop_ = true;
        break;
      }
      done = s + 1;
      if (work_ != nullptr) work_->fetch_add(1, std::memory_order_relaxed);
      if ((s + 1) % o_.eval_every == 0 || s + 1 == o_.steps) evaluate(s + 1);
    }
    // A stop seen at the last evaluation cuts nothing short.
    record_.complete = !stop_ || done == o_.steps;
    record_.diverged = diverged_;
    for (double target : o_.targets) record_.targets.push_back(steps_to_target(record_.rows, target));
    return {std::move(record_), std::move(x_)};
  }

 private:
  std::size_t width() const { return 2 * static_cast<std::size_t>(d_) + 1; }
  bool outer() const { return o_.outer.kind != OuterOptimizer::none; }

  // --fragments F > 1: each fragment has a protocol of its own, which mixes a copy
  // of the peers' coordinates of that fragment (parts_).
  void begin_parts() {
    const int parts = outer() ? o_.outer.fragments : 1;
    if (parts == 1) {
      protocol_->begin_trial(x_, seed_);
      return;
    }
    for (int f = 0; f < parts; ++f) {
      const Fragment part = round_fragment(o_.outer, f + 1, static_cast<std::size_t>(x_.dim));
      if (f > 0) more_.push_back(make_sequential_protocol(o_.protocol, n_));
      parts_.emplace_back(n_, static_cast<int>(part.size));
      copy_part(part, true);
      (f == 0 ? *protocol_ : *more_.back()).begin_trial(parts_.back(), seed_);
    }
  }
  // Between x_ and the fragment's copy, one way or the other.
  void copy_part(const Fragment& part, bool into_copy) {
    Population& copy = parts_[static_cast<std::size_t>(part.index)];
    for (int i = 0; i < n_; ++i) {
      const std::span<double> mine = x_.peer(i).subspan(part.begin, part.size), theirs = copy.peer(i);
      if (into_copy)
        std::copy(mine.begin(), mine.end(), theirs.begin());
      else
        std::copy(theirs.begin(), theirs.end(), mine.begin());
    }
  }
  RoundEffect step_part(const Fragment& part, const PopulationRound& view) {
    if (parts_.empty()) return protocol_->step(x_, view);
    copy_part(part, true);
    const RoundEffect effect =
        (part.index == 0 ? *protocol_ : *more_[static_cast<std::size_t>(part.index - 1)]).step(parts_[static_cast<std::size_t>(part.index)], view);
    copy_part(part, false);
    return effect;
  }
  PeerVector peer(Population& p, int i) { return {p.peer(i).data(), d_}; }

  // An asynchronous protocol: each interval between evaluations as events
  // (sgd/event_sgd.hpp), every peer at its own pace.
  PopulationTrial run_events(EventPeers& peers) && {
    std::function<double(int)> work;
    if (compute_.works()) work = [this](int i) { return compute_.work(i); };
    EventSgd sgd(o_, peers, failures_, seed_, n_, work);
    sgd.begin_trial(x_);
    evaluate(0);
    const auto gradient = [this](int i, int s) {
      PeerVector x = peer(x_, i), velocity = peer(velocity_, i);
      peers_[static_cast<std::size_t>(i)]->stochastic_gradient(x, o_.batch, seed_, static_cast<std::uint64_t>(s), g_);
      velocity = o_.momentum * velocity + g_;
      x -= o_.lr.at(s) * velocity;
    };
    int done = 0;  // steps run
    while (done < o_.steps && !stop_ && !reached_ && !diverged_) {
      const int next = std::min(o_.steps, (done / o_.eval_every + 1) * o_.eval_every);
      EventSgd::Interval interval;
      try {
        interval = sgd.run(x_, done, next, hosts_, gradient, stop_flag_);
      } catch (const StopRequested&) {
        stop_ = true;
        break;
      }
      time_ += interval.seconds;
      bytes_ += interval.effect.bytes;
      since_eval_ += interval.effect;
      rounds_done_ = interval.rounds_done;
      done = next;
      evaluate(done);
    }
    record_.complete = !stop_ || done == o_.steps;
    record_.diverged = diverged_;
    for (double target : o_.targets) record_.targets.push_back(steps_to_target(record_.rows, target));
    return {std::move(record_), std::move(x_)};
  }

  // Churn: a joiner takes its donor's model at the start of the steps that lead
  // to its first round, and no momentum. Then who is up in round r.
  void start_round(int r) {
    const std::vector<int> donors = failures_.donors(r);
    const std::uint64_t loaded = load_population_joiners(donors, x_);
    bytes_ += loaded;
    for (std::size_t i = 0; i < donors.size(); ++i)
      if (donors[i] >= 0) {
        const int joiner = static_cast<int>(i);
        peer(velocity_, joiner).setZero();
        if (!outer()) continue;
        peer(outer_velocity_, joiner).setZero();
        peer(anchor_, joiner) = peer(x_, joiner);  // its local steps start from the model it took
      }
    failures_.alive_mask(r, alive_);
    if (loaded > 0) time_ += load_seconds(donors, x_.model_dim, links_);
    step_seconds_ = compute_.seconds(alive_);
  }

  // Steps of many parameters (an MLP's) run on every thread the trial may use:
  // peers' steps are independent, so their bits do not depend on it.
  static constexpr double kThreadedStepWork = 1 << 24;  // peers x batch x parameters
  int step_blocks() const {
    const double work = static_cast<double>(n_) * o_.batch * static_cast<double>(d_);
    return work >= kThreadedStepWork ? step_threads_ : 1;
  }

  // Step s (0-based) of every peer up in its round, as SgdTrial::local_step.
  void local_step(int s) {
    const int blocks = step_blocks();
    while (static_cast<int>(block_g_.size()) < blocks - 1) block_g_.emplace_back(d_);
    for_blocks(n_, blocks, [&](int first, int last, int b) {
      local_steps(s, first, last, b == 0 ? g_ : block_g_[static_cast<std::size_t>(b - 1)]);
    });
    time_ += step_seconds_;
  }
  // Peers [first, last) of step s, with g their gradient's buffer.
  void local_steps(int s, int first, int last, Eigen::VectorXd& g) {
    const double lr = o_.lr.at(s);
    for (int i = first; i < last; ++i) {
      if ((i & 255) == 0) check_stop(stop_flag_);  // as PopulationRound::poll
      if (!alive_[static_cast<std::size_t>(i)]) continue;  // down in round r: sits out the steps before it
      PeerVector x = peer(x_, i), velocity = peer(velocity_, i);
      peers_[static_cast<std::size_t>(i)]->stochastic_gradient(x, o_.batch, seed_, static_cast<std::uint64_t>(s), g);
      if (o_.gradient_tracking) {  // the tracker after the model; velocity holds the previous gradient
        PeerVector z{x_.peer(i).data() + d_, d_};
        z += g - velocity;
        velocity = g;
        x -= lr * z;
      } else {
        velocity = o_.momentum * velocity + g;
        x -= lr * velocity;
      }
    }
  }

  void round(int r) {
    PopulationRound view{r, seed_, failures_, alive_, detection_.begin_round(), stop_flag_};
    view.links = &links_;
    // The round starts when the slowest peer is done with its local steps; a
    // faster one is ready that much earlier.
    if (compute_.works())
      links_.start_round([this](int i) { return o_.local_steps * (compute_.work(i) - step_seconds_); });
    else
      links_.start_round(nullptr);
    const Fragment part = round_fragment(o_.outer, r, static_cast<std::size_t>(x_.dim));
    auto swap_all = [&] {
      for (int i = 0; outer() && i < n_; ++i)
        swap_pseudo_gradient(o_.outer, x_.peer(i).subspan(part.begin, part.size),
                             anchor_.peer(i).subspan(part.begin, part.size));
    };
    swap_all();
    const RoundEffect effect = step_part(part, view);
    swap_all();
    if (outer())  // as SgdTrial::round: a peer down in round r takes no outer step
      for (int i = 0; i < n_; ++i)
        outer_step(o_.outer, x_.peer(i).subspan(part.begin, part.size), anchor_.peer(i).subspan(part.begin, part.size),
                   outer_velocity_.peer(i).subspan(part.begin, part.size), alive_[static_cast<std::size_t>(i)] != 0);
    since_eval_ += effect;
    bytes_ += effect.bytes;
    detection_.end_round();
    // The round's local steps were charged at the slowest peer's pace; a peer that
    // waited out a failure may end the round later than that (ComputeClock::slowest).
    time_ += links_.finish_round(compute_.slowest(alive_, detection_, o_.local_steps) - o_.local_steps * step_seconds_,
                                 detection_.waiting(), detection_.timeout());
    rounds_done_ = r;
  }

  // The trainer's measurement: each peer's x - x*, x and ||x - x*||^2, summed in
  // the MPI engines' tree order, then the row's metrics from the sums.
  void evaluate(int step) {
    const std::size_t d = static_cast<std::size_t>(d_), w = width();
    for (int i = 0; i < n_; ++i) {
      const std::span<const double> x = x_.peer(i);
      double* out = partial_.data() + static_cast<std::size_t>(i) * w;
      double squares = 0.0;
      for (std::size_t k = 0; k < d; ++k) {
        out[k] = x[k] - reference_[static_cast<Eigen::Index>(k)];
        out[d + k] = x[k];
        squares += out[k] * out[k];
      }
      out[2 * d] = squares;
    }
    tree_sum(partial_, w);
    const double squares = partial_[2 * d];
    TrainingRow row = metrics_.row(std::span<const double>(partial_.data(), 2 * d), squares, n_);
    row.step = step;
    row.round = rounds_done_;
    row.alive = rounds_done_ == 0 ? n_ : failures_.count_alive(rounds_done_);
    since_eval_.write_to(row);
    row.bytes_sent = bytes_;
    row.time = time_;
    row.detection_time = detection_.detection_time();
    since_eval_ = {};
    record_.rows.push_back(row);
    stop_ = stop_flag_ != nullptr && *stop_flag_;
    reached_ = o_.stop_at_target && row.relative_gap <= o_.targets.back();
    // As the trainer (the same rule on the same bits): x_0 = 0 is where the
    // problem's f(x_0) was measured.
    diverged_ = step > 0 && metrics_.diverged(row, squares);
  }

  std::atomic<long long>* work_;  // the run's steps so far, for its progress (run/trial_pool.hpp)
  const int step_threads_;
  const TrainingOptions& o_;
  const std::vector<std::unique_ptr<Objective>>& peers_;
  const Eigen::VectorXd& reference_;  // x*
  const TrainingMetrics metrics_;
  const std::atomic<bool>* stop_flag_;
  const Hosts& hosts_;
  LinkLoads links_;
  DetectionClock detection_;
  const ComputeClock compute_;  // --step-flops
  const int n_;
  const Eigen::Index d_;
  const std::uint64_t seed_;
  const FailureModel failures_;
  const std::unique_ptr<SequentialProtocol> protocol_;
  Population x_, velocity_;
  Population anchor_, outer_velocity_;  // --outer-optimizer: where the local steps start, the outer momentum
  std::vector<std::unique_ptr<SequentialProtocol>> more_;  // --fragments: the protocols of fragments 1 .. F - 1
  std::vector<Population> parts_;                           // --fragments: each fragment's copy
  Eigen::VectorXd g_;
  std::vector<Eigen::VectorXd> block_g_;  // the gradient buffers of a local step's blocks 1, 2, ...
  std::vector<std::uint8_t> alive_;
  std::vector<double> partial_;  // the measurement's per-peer rows, then their sums
  TrainingTrial record_;
  RoundReport since_eval_;  // since the last evaluation
  std::uint64_t bytes_ = 0;                                   // since step 0
  double time_ = 0.0;         // since step 0: the steps' computation, the rounds' α–β estimate, detections
  double step_seconds_ = 0.0;  // a local step's computation in the current round
  int rounds_done_ = 0;
  bool stop_ = false, reached_ = false, diverged_ = false;
};

void check_inputs(const TrainingOptions& options, const Problem& problem, int n) {
  require_resolved(options, n, "run_training_sequential");
  if (static_cast<int>(problem.peers.size()) != n || !problem.pooled)
    throw std::invalid_argument("run_training_sequential: the problem is not build_problem_sequential's for " +
                                std::to_string(n) + " peers");
}

}  // namespace

PopulationTrial run_training_sequential_trial(const TrainingOptions& options, const Problem& problem, int n,
                                              int trial, const std::atomic<bool>* stop, const PlatformModel& link) {
  check_inputs(options, problem, n);
  return PopulationSgd(options, problem, n, trial, stop, Hosts(link, n, options.step_flops > 0)).run();
}

TrainingResult run_training_sequential(const TrainingOptions& options, const Problem& problem, int n,
                                       TrainingObserver& observer, int threads, const PlatformModel& link) {
  // Peer 0's final model of the trials that may still be the last one reported:
  // trials run at most 2 threads ahead of the reporting (run/trial_pool.hpp), so
  // older ones are dropped and memory does not grow with the trial count.
  std::map<int, std::vector<double>> models;
  std::mutex models_mutex;
  const int ahead = 2 * std::max(1, threads) + 1;
  check_inputs(options, problem, n);
  TrainingResult result;
  std::optional<Hosts> drawn;  // once for every trial
  try {
    drawn.emplace(link, n, options.step_flops > 0, [&] { return observer.stop_requested(); });
  } catch (const StopRequested&) {  // before any trial: nothing to report
    result.stopped = true;
    return result;
  }
  const Hosts& hosts = *drawn;
  FluidMemo memo;  // rounds simulated flow by flow, which trials repeat
  // Cores that no trial runs on go to the local steps of the trials that do.
  const int step_threads = std::max(1, threads / std::clamp(threads, 1, std::max(options.trials, 1)));
  result.stopped = run_trials_on_threads(options.trials, threads, observer, result.trials,
                                         [&](int k, const std::atomic<bool>* stop, std::atomic<long long>* work) {
                                           PopulationTrial t =
                                               PopulationSgd(options, problem, n, k, stop, hosts, &memo, work,
                                                             step_threads)
                                                   .run();
                                           // Peer 0's model (under --gradient-tracking, without its tracker).
                                           const std::span<const double> first =
                                               t.models.peer(0).first(static_cast<std::size_t>(problem.pooled->dim()));
                                           const std::lock_guard lock(models_mutex);
                                           models[k].assign(first.begin(), first.end());
                                           models.erase(models.begin(), models.lower_bound(k - ahead));
                                           return std::move(t.record);
                                         });
  if (!result.trials.empty()) result.model = std::move(models[result.trials.back().index]);
  return result;
}

}  // namespace avb
