#include "sgd/options.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/format.hpp"
#include "sim/compute.hpp"

namespace avb {

LocalStepsDist parse_local_steps_dist(std::string_view name) { return kLocalStepsDistNames.parse(name); }

std::string_view to_string(LocalStepsDist dist) { return kLocalStepsDistNames.name(dist); }

std::string_view to_string(OuterOptimizer optimizer) { return kOuterOptimizerNames.name(optimizer); }
std::string_view to_string(OuterMix mix) { return kOuterMixNames.name(mix); }

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

std::optional<double> stable_lr_bound(const TrainingOptions& options, int n_peers) {
  const std::optional<Curvature> c = quadratic_curvature(options.objective, n_peers);
  if (!c) return std::nullopt;
  const bool pooled_steps = options.protocol.name == "allreduce" && options.local_steps == 1;
  return 2.0 * (1.0 + options.momentum) / (pooled_steps ? c->pooled : c->peer);
}

namespace {

// --gradient-tracking's needs: one step per round, no momentum, and rounds that keep the sum.
void check_tracking(const TrainingOptions& o) {
  const auto refusal = protocol_info(o.protocol.name).tracking_refusal;
  if (refusal == nullptr) {
    std::string with;
    for (const ProtocolInfo& p : protocol_catalog())
      if (p.tracking_refusal != nullptr) with += (with.empty() ? "" : ", ") + std::string(p.name);
    throw ConfigError("--gradient-tracking: --protocol " + o.protocol.name +
                      "'s rounds do not keep the peers' sum exactly; it runs over " + with);
  }
  if (const std::string why = refusal(o.protocol); !why.empty()) throw ConfigError("--gradient-tracking: " + why);
  if (o.local_steps != 1 || o.local_steps_dist != LocalStepsDist::fixed)
    throw ConfigError("--gradient-tracking: needs --local-steps 1 (the trackers are mixed at every step)");
  if (o.momentum != 0.0) throw ConfigError("--gradient-tracking: needs --momentum 0 (the step is along the tracker)");
}

// --outer-optimizer's needs: local steps to make a pseudo-gradient of, and rounds
// that every peer reaches after the same steps.
void check_outer(const TrainingOptions& o) {
  const std::string flag = "--outer-optimizer " + std::string(to_string(o.outer.kind));
  if (o.local_steps < 2)
    throw ConfigError(flag + ": needs --local-steps >= 2 (the pseudo-gradient is the change of H local steps)");
  if (o.gradient_tracking) throw ConfigError(flag + ": does not combine with --gradient-tracking");
  if (protocol_info(o.protocol.name).asynchronous)
    throw ConfigError(flag + ": --protocol " + o.protocol.name +
                      " is asynchronous (the outer step needs rounds that every peer reaches after its H steps)");
}

}  // namespace

void check_fragments(const OuterOptions& outer, long long dim) {
  if (outer.fragments > dim)
    throw ConfigError("--fragments: " + std::to_string(outer.fragments) + " is more than the model's " +
                      std::to_string(dim) + " parameters (each fragment needs at least one)");
}

TrainingOptions resolve(const TrainingOptions& options, int n_peers) {
  TrainingOptions r = options;
  resolve_run(r, n_peers, true);
  if (r.protocol.wait.policy != WaitPolicy::all)
    throw ConfigError("--wait: sgd_bench waits for every member (all); the waiting policies are averaging_bench's");
  if (r.stragglers.sigma > 0)
    throw ConfigError("--straggler-sigma: averaging_bench only; sgd_bench accepts 0");
  r.objective = resolve(options.objective, n_peers);
  require(r.steps >= 0, "--steps", r.steps, "an integer >= 0");
  require(r.local_steps >= 1, "--local-steps", r.local_steps, "an integer >= 1");
  if (r.local_steps_dist == LocalStepsDist::geometric && !protocol_info(r.protocol.name).asynchronous)
    throw ConfigError("--local-steps-dist: geometric needs --protocol swarm (the other protocols' rounds are "
                      "collective: every peer must reach them after the same number of steps)");
  if (has_joiners(r.failure) && r.local_steps_dist == LocalStepsDist::geometric)
    throw ConfigError("--failure " + std::string(to_string(r.failure)) + ": needs --local-steps-dist fixed (a joiner and its donor must reach the "
                      "round together)");
  require(r.step_flops >= 0.0 && std::isfinite(r.step_flops), "--step-flops", r.step_flops, "a number >= 0");
  require(r.batch >= 1, "--batch", r.batch, "an integer >= 1");
  require(r.lr.lr > 0.0 && std::isfinite(r.lr.lr), "--lr", r.lr.lr, "a number > 0");
  require(r.lr.decay_steps >= 1, "--lr-decay-steps", r.lr.decay_steps, "an integer >= 1");
  require(r.lr.decay_factor > 0.0 && r.lr.decay_factor <= 1.0, "--lr-decay-factor", r.lr.decay_factor,
          "a number in (0, 1]");
  require(r.momentum >= 0.0 && r.momentum < 1.0, "--momentum", r.momentum, "a number in [0, 1)");
  require(r.eval_every >= 1, "--eval-every", r.eval_every, "an integer >= 1");
  require(r.outer.lr > 0.0 && std::isfinite(r.outer.lr), "--outer-lr", r.outer.lr, "a number > 0");
  require(r.outer.momentum >= 0.0 && r.outer.momentum < 1.0, "--outer-momentum", r.outer.momentum, "a number in [0, 1)");
  require(r.outer.fragments >= 1, "--fragments", r.outer.fragments, "an integer >= 1");
  if (r.outer.kind != OuterOptimizer::none) check_outer(r);
  // A --data file's dimension is known once it is read (build_problem checks then).
  if (r.objective.kind == ObjectiveKind::quadratic || r.objective.data_path.empty())
    check_fragments(r.outer, r.objective.dim);
  if (r.gradient_tracking) check_tracking(r);
  if (!r.test_data.empty() && (r.objective.kind == ObjectiveKind::quadratic || r.objective.data_path.empty()))
    throw ConfigError("--test-data: applies to --objective logistic, softmax or mlp with --data only (synthetic data "
                      "has its own held-out set)");
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
  b.waits = failures_possible(o) ? rounds : 0.0;
  b.detection_timeout = o.detection_timeout;
  b.counts = "--steps " + std::to_string(o.steps) + " x --trials " + std::to_string(o.trials);
  check_simulated_time(b);
}

std::vector<std::pair<std::string, std::string>> describe(const TrainingOptions& o) {
  auto out = describe(o.protocol);
  for (auto& kv : describe(o.objective)) out.push_back(std::move(kv));
  describe_failures(o, out);
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
  out.emplace_back("gradient-tracking", o.gradient_tracking ? "true" : "false");
  out.emplace_back("outer-optimizer", std::string(to_string(o.outer.kind)));
  if (o.outer.kind != OuterOptimizer::none) {
    out.emplace_back("outer-lr", format_number(o.outer.lr));
    out.emplace_back("outer-momentum", format_number(o.outer.momentum));
    out.emplace_back("fragments", std::to_string(o.outer.fragments));
    out.emplace_back("outer-mix", std::string(to_string(o.outer.mix)));
  }
  out.emplace_back("eval-every", std::to_string(o.eval_every));
  describe_trials(o, out);
  if (!o.test_data.empty()) out.emplace_back("test-data", o.test_data);
  return out;
}

}  // namespace avb
