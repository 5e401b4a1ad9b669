#include "run/sequential.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "protocols/population.hpp"
#include "run/trial_pool.hpp"
#include "run/tree_sum.hpp"
#include "sim/fluid_memo.hpp"

namespace avb {

namespace {

// The trace's metrics (docs/trace-format.md) as run_averaging measures them: one
// tree of every peer's x_i - m0 and ||x_i - m0||^2, m0 the initial mean, and
// variance = error - mean_drift.
class PopulationMeter {
 public:
  explicit PopulationMeter(const Population& x)
      : dim_(static_cast<std::size_t>(x.dim)), reference_(dim_), partial_(static_cast<std::size_t>(x.n) * (dim_ + 1)) {
    std::copy(x.values.begin(), x.values.end(), partial_.begin());
    tree_sum(std::span<double>(partial_.data(), x.values.size()), dim_);
    for (std::size_t k = 0; k < dim_; ++k) reference_[k] = partial_[k] / static_cast<double>(x.n);
  }

  RoundRow measure(const Population& x) {
    const std::size_t width = dim_ + 1;
    for (int i = 0; i < x.n; ++i) {
      const std::span<const double> row = x.peer(i);
      double* out = partial_.data() + static_cast<std::size_t>(i) * width;
      double squares = 0.0;
      for (std::size_t k = 0; k < dim_; ++k) {
        out[k] = row[k] - reference_[k];
        squares += out[k] * out[k];
      }
      out[dim_] = squares;
    }
    tree_sum(partial_, width);
    const double n = static_cast<double>(x.n);
    RoundRow result;
    double drift = 0.0;
    for (std::size_t k = 0; k < dim_; ++k) drift += (partial_[k] / n) * (partial_[k] / n);
    result.mean_drift = drift / static_cast<double>(dim_);
    result.error = partial_[dim_] / (n * static_cast<double>(dim_));
    const double variance = result.error - result.mean_drift;  // NaN stays NaN
    result.variance = variance < 0.0 ? 0.0 : variance;
    return result;
  }

 private:
  std::size_t dim_;
  std::vector<double> reference_, partial_;
};

// Every peer's initial vector; false when a stop came first (checked every 65,536
// peers: a population of millions takes a second to draw).
bool fill_initial_values(Population& x, std::uint64_t seed, const std::atomic<bool>* stop) {
  for (int i = 0; i < x.n; ++i) {
    if ((i & 65535) == 0 && stop != nullptr && *stop) return false;
    for (int k = 0; k < x.dim; ++k) x.peer(i)[static_cast<std::size_t>(k)] = initial_value(seed, i, k);
  }
  return true;
}

// The estimate refuses runs that could wrap the bytes counter or reach an infinite
// time (run/estimate.hpp); this guard makes any it missed an error, never a
// wrong column.
void check_counters(const RoundRow& previous, const RoundRow& row, int trial) {
  if (row.bytes_sent >= previous.bytes_sent && std::isfinite(row.time)) return;
  throw Error("round " + std::to_string(row.round) + " of trial " + std::to_string(trial) +
              (std::isfinite(row.time) ? ": the bytes_sent counter overflowed" : ": the simulated time is not finite") +
              " (see --dry-run)");
}

}  // namespace

DetectionClock::DetectionClock(int n_peers, double timeout)
    : timeout_(timeout),
      waiting_(timeout > 0 ? static_cast<std::size_t>(n_peers) : 0),
      waited_(waiting_.size(), 0.0) {}

std::span<std::uint8_t> DetectionClock::begin_round() {
  std::fill(waiting_.begin(), waiting_.end(), std::uint8_t{0});
  return waiting_;
}

void DetectionClock::end_round() {
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    if (!waiting_[i]) continue;
    waited_[i] += timeout_;
    most_ = std::max(most_, waited_[i]);
  }
}

ComputeClock::ComputeClock(std::uint64_t trial_seed, const StragglerSpec& spec, int n_peers, double flops,
                           const Hosts& hosts)
    : hosts_(hosts), flops_(flops), slowdown_(spec.slowdown) {
  if (flops <= 0 || spec.fraction <= 0) return;
  const Stragglers stragglers(trial_seed, spec);
  for (int i = 0; i < n_peers; ++i)
    if (stragglers.factor(i) > 1.0) stragglers_.push_back(i);
}

double ComputeClock::latest(std::span<const std::uint8_t> alive, std::span<const std::uint8_t> waiting,
                            double timeout, int steps) const {
  double most = 0.0;
  std::size_t next = 0;  // the first straggler >= i (stragglers_ is in peer order)
  for (std::size_t i = 0; i < alive.size(); ++i) {
    while (next < stragglers_.size() && stragglers_[next] < static_cast<int>(i)) ++next;
    if (!alive[i]) continue;
    const bool straggles = next < stragglers_.size() && stragglers_[next] == static_cast<int>(i);
    const double work = flops_ * (straggles ? slowdown_ : 1.0) / hosts_.speed(static_cast<int>(i));
    most = std::max(most, steps * work + (!waiting.empty() && waiting[i] ? timeout : 0.0));
  }
  return most;
}

double ComputeClock::work(int peer) const {
  const bool straggles = std::binary_search(stragglers_.begin(), stragglers_.end(), peer);
  return flops_ * (straggles ? slowdown_ : 1.0) / hosts_.speed(peer);
}

double ComputeClock::seconds(std::span<const std::uint8_t> alive) const {
  if (flops_ <= 0) return 0.0;
  if (!hosts_.uniform_speed()) return latest(alive, {}, 0.0, 1);
  // Equal hosts: an alive straggler is the slowest.
  const double speed = hosts_.platform().host_speed;
  for (int i : stragglers_)
    if (alive[static_cast<std::size_t>(i)]) return flops_ * slowdown_ / speed;
  return std::find(alive.begin(), alive.end(), std::uint8_t{1}) != alive.end() ? flops_ / speed : 0.0;
}

double ComputeClock::slowest_of(std::span<const std::uint8_t> alive, std::span<const double> work,
                                const DetectionClock& detection) {
  const std::span<const std::uint8_t> waiting = detection.waiting();
  double most = 0.0;
  for (std::size_t i = 0; i < alive.size(); ++i)
    if (alive[i]) most = std::max(most, work[i] + (!waiting.empty() && waiting[i] ? detection.timeout() : 0.0));
  return most;
}

double ComputeClock::slowest(std::span<const std::uint8_t> alive, const DetectionClock& detection, int steps) const {
  const std::span<const std::uint8_t> waiting = detection.waiting();  // empty: no timeout
  const bool anyone_waits = std::find(waiting.begin(), waiting.end(), std::uint8_t{1}) != waiting.end();
  if (flops_ <= 0) return anyone_waits ? detection.timeout() : 0.0;
  if (!anyone_waits) return steps * seconds(alive);
  return latest(alive, waiting, detection.timeout(), steps);
}

std::uint64_t load_population_joiners(const std::vector<int>& donors, Population& x) {
  std::uint64_t bytes = 0;
  for (std::size_t p = 0; p < donors.size(); ++p) {
    const int donor = donors[p];
    if (donor < 0) continue;  // donors never join, so the order of the copies does not matter
    std::copy(x.peer(donor).begin(), x.peer(donor).end(), x.peer(static_cast<int>(p)).begin());
    bytes += sizeof(double) * x.model_dim;
  }
  return bytes;
}

void charge_loads(const std::vector<int>& donors, std::size_t model_dim, LinkLoads& links) {
  const double message = sizeof(double) * static_cast<double>(model_dim);
  links.before_work();
  for (std::size_t p = 0; p < donors.size(); ++p)
    if (donors[p] >= 0) links.send(donors[p], static_cast<int>(p), message);
  links.phase();
}

double load_seconds(const std::vector<int>& donors, std::size_t model_dim, LinkLoads& links) {
  charge_loads(donors, model_dim, links);
  return links.take_seconds();
}

namespace {

// A round's time beside its messages: every alive peer's work (one charge for all
// when it is the same every round; else each peer's own, its arrival, cut short
// by a waiting policy) and the failure detections waited.
class WorkClock {
 public:
  WorkClock(const AveragingOptions& o, std::uint64_t seed, int n, const Hosts& hosts)
      : detection(n, o.detection_timeout),
        compute_(seed, o.stragglers, n, o.compute_flops, hosts),
        arrivals_(seed, o.stragglers, o.compute_flops, o.protocol.wait, [&hosts](int peer) { return hosts.speed(peer); }),
        waits_(o.protocol.wait.policy != WaitPolicy::all && o.compute_flops > 0),
        work_(waits_ || (o.stragglers.sigma > 0 && o.compute_flops > 0) ? static_cast<std::size_t>(n) : 0) {}

  // Round t's view for the protocol, each peer's work set to its arrival.
  PopulationRound begin(int t, std::uint64_t seed, const FailureModel& failures, std::span<const std::uint8_t> alive,
                        const std::atomic<bool>* stop, LinkLoads& links) {
    for (std::size_t i = 0; i < work_.size(); ++i) {
      if ((i & 65535) == 0) check_stop(stop);  // millions of lognormal draws take a second
      work_[i] = arrivals_.at(t, static_cast<int>(i));
    }
    // Each peer sends once its work is done (a group's members as it goes on).
    if (!work_.empty()) links.start_round([this](int i) { return work_[static_cast<std::size_t>(i)]; });
    else if (compute_.works()) links.start_round([this](int i) { return compute_.work(i); });
    else links.start_round(nullptr);
    return PopulationRound{t,    seed, failures, alive, detection.begin_round(), stop, waits_ ? &arrivals_ : nullptr,
                           work_, &links};
  }
  // The round's seconds: until its last alive peer is done with its work, its
  // messages (which `links` holds) and its wait for a failure's detection.
  double end(std::span<const std::uint8_t> alive, LinkLoads& links) {
    detection.end_round();
    const double alone =
        work_.empty() ? compute_.slowest(alive, detection) : ComputeClock::slowest_of(alive, work_, detection);
    return links.finish_round(alone, detection.waiting(), detection.timeout());
  }

  DetectionClock detection;

 private:
  const ComputeClock compute_;
  const Arrivals arrivals_;
  bool waits_;
  std::vector<double> work_;
};

TrialRecord sequential_trial(const AveragingOptions& options, int n, int trial, const std::atomic<bool>* stop,
                             const Hosts& hosts, FluidMemo* memo = nullptr, std::atomic<long long>* work = nullptr) {
  TrialRecord record;
  record.index = trial;
  record.seed = trial_seed(options.seed, trial);
  const std::uint64_t seed = record.seed;
  const FailureModel failures = trial_failures(options, seed, n);
  Population x(n, options.dim);
  x.model_dim = static_cast<std::size_t>(options.model_dim);
  if (!fill_initial_values(x, seed, stop)) {  // a stop during set-up: no rows, the trial is not reported
    record.complete = false;
    return record;
  }
  PopulationMeter meter(x);
  const std::unique_ptr<SequentialProtocol> protocol = make_sequential_protocol(options.protocol, n);
  protocol->begin_trial(x, seed);
  RoundRow row = meter.measure(x);
  row.alive = n;
  record.rows.push_back(row);
  std::vector<std::uint8_t> alive(static_cast<std::size_t>(n));
  WorkClock clock(options, seed, n, hosts);
  LinkLoads links(hosts, n, stop, memo);
  const double min_target = options.targets.back();
  for (int t = 1; t <= options.rounds; ++t) {
    if (options.stop_at_target && record.rows.back().variance < min_target) break;
    if (stop != nullptr && *stop) {
      record.complete = false;
      break;
    }
    const std::vector<int> donors = failures.donors(t);
    const std::uint64_t joined = load_population_joiners(donors, x);
    const int alive_count = failures.alive_mask(t, alive);
    RoundEffect effect;
    double seconds = 0.0;
    try {
      const PopulationRound round = clock.begin(t, seed, failures, alive, stop, links);
      if (joined > 0) charge_loads(donors, x.model_dim, links);  // as load_joiners, before the work
      effect = protocol->step(x, round);
      seconds = clock.end(alive, links);
    } catch (const StopRequested&) {  // the round is dropped: the rows so far stand
      record.complete = false;
      break;
    }
    const RoundRow& previous = record.rows.back();
    row = meter.measure(x);
    row.round = t;
    row.alive = alive_count;
    effect.write_to(row);
    row.bytes_sent = previous.bytes_sent + joined + effect.bytes;
    row.time = previous.time + seconds;
    row.detection_time = clock.detection.detection_time();
    check_counters(previous, row, trial);
    record.rows.push_back(row);
    if (work != nullptr) work->fetch_add(1, std::memory_order_relaxed);
  }
  for (double target : options.targets) record.targets.push_back(rounds_to_target(record.rows, target));
  return record;
}

}  // namespace

TrialRecord run_sequential_trial(const AveragingOptions& options, int n, int trial, const std::atomic<bool>* stop,
                                 const PlatformModel& link) {
  return sequential_trial(options, n, trial, stop, Hosts(link, n, options.compute_flops > 0));
}

AveragingResult run_averaging_sequential(const AveragingOptions& options, int n, AveragingObserver& observer,
                                         int threads, const PlatformModel& link) {
  require_resolved(options, n, "run_averaging_sequential");
  AveragingResult result;
  std::optional<Hosts> hosts;  // drawn once for every trial
  FluidMemo memo;              // rounds simulated flow by flow, which trials repeat
  try {
    hosts.emplace(link, n, options.compute_flops > 0, [&] { return observer.stop_requested(); });
  } catch (const StopRequested&) {  // before any trial: nothing to report
    result.stopped = true;
    return result;
  }
  result.stopped = run_trials_on_threads(options.trials, threads, observer, result.trials,
                                         [&](int k, const std::atomic<bool>* stop, std::atomic<long long>* work) {
                                           return sequential_trial(options, n, k, stop, *hosts, &memo, work);
                                         });
  return result;
}

}  // namespace avb
