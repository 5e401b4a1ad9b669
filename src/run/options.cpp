#include "run/options.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"

namespace avb {

void require(bool ok, const std::string& flag, double value, const std::string& accepted) {
  if (!ok) throw ConfigError(flag + ": " + format_number(value) + " is not " + accepted);
}

void resolve_run(RunOptions& r, int n_peers, bool training) {
  r.protocol = resolve(r.protocol, n_peers);
  for_each_failure_setting(r, RangeCheck{});
  check_churn(r.failure, r.join_rate);
  if (r.failure == FailureKind::trace) {
    if (r.availability == nullptr) throw ConfigError("--failure: trace needs --availability FILE");
    if (r.fail_rate != 0.0)
      throw ConfigError("--fail-rate: does not apply to --failure trace (--availability says when peers are down)");
    (void)trial_failures(r, 0, n_peers);  // a trace naming more peers than the run is refused here, once
  } else if (r.availability != nullptr) {
    throw ConfigError("--availability: needs --failure trace (not " + std::string(to_string(r.failure)) + ")");
  }
  check_failure_support(r.protocol.name, r.failure, training);
  require(r.trials >= 1, "--trials", r.trials, "an integer >= 1");
  if (r.targets.empty()) throw ConfigError("--target: at least one target is needed (a number > 0)");
  for (double t : r.targets) require(t > 0.0 && std::isfinite(t), "--target", t, "a number > 0");
  std::sort(r.targets.begin(), r.targets.end(), std::greater<>());
  r.targets.erase(std::unique(r.targets.begin(), r.targets.end()), r.targets.end());
  r.resolved_for = n_peers;
}

FailureModel trial_failures(const RunOptions& o, std::uint64_t seed, int n_peers) {
  return FailureModel(seed, o.fail_rate, o.failure, n_peers, o.join_rate, o.availability);
}

bool failures_possible(const RunOptions& o) { return o.fail_rate > 0 || o.failure == FailureKind::trace; }

void require_resolved(const RunOptions& options, int n_peers, const char* where) {
  if (options.resolved_for != n_peers)
    throw Error(std::string(where) + ": the options were not resolved for " + std::to_string(n_peers) +
                " peers (call resolve() once per run and pass its result)");
}

void describe_failures(const RunOptions& o, Described& out) {
  SettingTexts settings;
  for_each_failure_setting(o, settings);
  for (auto& kv : settings.out) out.push_back(std::move(kv));
}

void describe_trials(const RunOptions& o, Described& out) {
  out.emplace_back("trials", std::to_string(o.trials));
  out.emplace_back("seed", std::to_string(o.seed));
  std::string targets;
  for (double t : o.targets) targets += (targets.empty() ? "" : ",") + format_number(t);
  out.emplace_back("target", targets);
  out.emplace_back("stop-at-target", o.stop_at_target ? "true" : "false");
}

std::uint64_t trial_seed(std::uint64_t seed, int trial) {
  return Stream(seed, StreamId::trial_seeds).bits(static_cast<std::uint64_t>(trial), 0, 0);
}

}  // namespace avb
