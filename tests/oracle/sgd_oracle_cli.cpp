// The local-SGD oracle as a command: prints the rows run_training would record,
// one CSV line per (trial, row), so that script tests can compare an sgd_bench
// trace with it at sizes the GoogleTest binaries cannot reach (1024 simulated
// peers, tests/scripts/test_smpi_sgd_oracle_1024.sh). No MPI calls: it runs as a
// plain process, every peer's model in one loop.
//
//   sgd_oracle_cli --peers N [sgd_bench's flags, each as --flag value]
//
// Flags read (defaults as sgd_bench's): --protocol --fail-rate --failure
// --on-failure --collective --grid --placement --key-update --group-size
// --min-group-size --topology --weights --alive-weights; --objective --dim
// --preset --condition --zeta --sigma --data --data-dim --split --test-data
// --samples-per-peer --separation --label-skew; --steps --local-steps --batch --lr
// --lr-schedule --lr-decay-steps --lr-decay-factor --momentum --eval-every
// --trials --seed --target (repeatable) and the switch --stop-at-target. Others
// (--out, --quiet, --overwrite) are accepted and ignored, so that a script can
// pass the oracle the very arguments it gave sgd_bench.
//
// Output: a header, then trial,step,round,loss,gap,relative_gap,distance,
// consensus,accuracy,alive,groups,failed_groups,bytes_sent with doubles as %.17g
// (a quadratic's accuracy is nan).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "protocols/gossip.hpp"
#include "protocols/grid.hpp"
#include "protocols/group_allreduce.hpp"
#include "sgd/objective.hpp"
#include "sgd/trainer.hpp"
#include "sgd_oracle.hpp"
#include "sim/failures.hpp"
#include "sim/topology.hpp"

namespace {

// The same conversions as sgd_bench's (apps/common/app_support.cpp): strtod for
// reals, so that a learning rate parses to the same double.
double real(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isnan(value))
    throw avb::ConfigError(flag + ": '" + text + "' is not a number");
  return value;
}

long long integer(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw avb::ConfigError(flag + ": '" + text + "' is not an integer");
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  static const std::set<std::string> switches = {"--stop-at-target", "--quiet", "--overwrite"};
  std::map<std::string, std::string> flags;
  std::vector<std::string> targets;
  bool stop_at_target = false;
  bool usage = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (switches.count(flag)) {
      stop_at_target = stop_at_target || flag == "--stop-at-target";
      continue;
    }
    if (flag.rfind("--", 0) != 0 || i + 1 >= argc) {
      usage = true;
      break;
    }
    const std::string value = argv[++i];
    if (flag == "--target") {
      targets.push_back(value);
    } else {
      flags[flag] = value;
    }
  }
  if (usage || !flags.count("--peers")) {
    std::fprintf(stderr, "usage: sgd_oracle_cli --peers N [--flag value ...] [--stop-at-target]\n");
    return 2;
  }
  auto has = [&](const char* flag) { return flags.count(flag) != 0; };
  auto get = [&](const char* flag) { return flags.at(flag); };
  try {
    const int n = static_cast<int>(integer("--peers", get("--peers")));
    avb::TrainingOptions o;  // sgd_bench's defaults
    // the protocol and its failures
    if (has("--protocol")) o.protocol.name = get("--protocol");
    if (has("--fail-rate")) o.fail_rate = real("--fail-rate", get("--fail-rate"));
    if (has("--failure")) o.failure = avb::parse_failure_kind(get("--failure"));
    if (has("--on-failure") && get("--on-failure") != "default")
      o.protocol.on_failure = avb::parse_failure_semantics(get("--on-failure"));
    if (has("--collective")) o.protocol.collective = avb::parse_collective(get("--collective"));
    if (has("--grid") && get("--grid") != "default") o.protocol.grid = avb::parse_grid(get("--grid"));
    if (has("--placement")) o.protocol.placement = avb::parse_placement(get("--placement"));
    if (has("--key-update")) o.protocol.key_update = avb::parse_key_update(get("--key-update"));
    if (has("--group-size")) o.protocol.group_size = static_cast<int>(integer("--group-size", get("--group-size")));
    if (has("--min-group-size"))
      o.protocol.min_group_size = static_cast<int>(integer("--min-group-size", get("--min-group-size")));
    if (has("--topology") && get("--topology") != "default")
      o.protocol.topology = avb::parse_topology(get("--topology"));
    if (has("--weights")) o.protocol.weights = avb::parse_weights(get("--weights"));
    if (has("--alive-weights")) o.protocol.alive_weights = avb::parse_alive_weights(get("--alive-weights"));
    // the problem
    avb::ObjectiveOptions& f = o.objective;
    if (has("--objective")) f.kind = avb::parse_objective_kind(get("--objective"));
    if (has("--dim")) f.dim = static_cast<int>(integer("--dim", get("--dim")));
    if (has("--preset")) f.preset = avb::parse_quadratic_preset(get("--preset"));
    if (has("--condition")) f.condition = real("--condition", get("--condition"));
    if (has("--zeta")) f.heterogeneity = real("--zeta", get("--zeta"));
    if (has("--sigma")) f.gradient_noise = real("--sigma", get("--sigma"));
    if (has("--data")) f.data_path = get("--data");
    if (has("--data-dim")) f.data_dim = static_cast<int>(integer("--data-dim", get("--data-dim")));
    if (has("--split")) f.split = avb::parse_data_split(get("--split"));
    if (has("--test-data")) o.test_data = get("--test-data");
    if (has("--samples-per-peer"))
      f.samples_per_peer = static_cast<int>(integer("--samples-per-peer", get("--samples-per-peer")));
    if (has("--separation")) f.separation = real("--separation", get("--separation"));
    if (has("--label-skew")) f.label_skew = real("--label-skew", get("--label-skew"));
    // the optimiser
    if (has("--steps")) o.steps = static_cast<int>(integer("--steps", get("--steps")));
    if (has("--local-steps")) o.local_steps = static_cast<int>(integer("--local-steps", get("--local-steps")));
    if (has("--batch")) o.batch = static_cast<int>(integer("--batch", get("--batch")));
    if (has("--lr")) o.lr.lr = real("--lr", get("--lr"));
    if (has("--lr-schedule")) o.lr.schedule = avb::parse_lr_schedule(get("--lr-schedule"));
    if (has("--lr-decay-steps"))
      o.lr.decay_steps = static_cast<int>(integer("--lr-decay-steps", get("--lr-decay-steps")));
    if (has("--lr-decay-factor")) o.lr.decay_factor = real("--lr-decay-factor", get("--lr-decay-factor"));
    if (has("--momentum")) o.momentum = real("--momentum", get("--momentum"));
    if (has("--eval-every")) o.eval_every = static_cast<int>(integer("--eval-every", get("--eval-every")));
    // the run
    if (has("--trials")) o.trials = static_cast<int>(integer("--trials", get("--trials")));
    if (has("--seed")) {
      const std::string& s = get("--seed");
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
        throw avb::ConfigError("--seed: '" + s + "' is not an integer in [0, 2^64)");
      o.seed = std::stoull(s);
    }
    if (!targets.empty()) {
      o.targets.clear();
      for (const auto& t : targets) o.targets.push_back(real("--target", t));
    }
    o.stop_at_target = stop_at_target;
    o = avb::resolve(o, n);  // the checks and defaults sgd_bench applies (run_training_trial resolves again)

    std::printf("trial,step,round,loss,gap,relative_gap,distance,consensus,accuracy,alive,groups,failed_groups,"
                "bytes_sent\n");
    for (int k = 0; k < o.trials; ++k) {
      const avb::oracle::TrainingOutcome outcome = avb::oracle::run_training_trial(o, n, k);
      for (const avb::TrainingRow& r : outcome.trial.rows)
        std::printf("%d,%d,%d,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g,%d,%d,%d,%llu\n", k, r.step, r.round, r.loss,
                    r.gap, r.relative_gap, r.distance, r.consensus, r.accuracy, r.alive, r.groups, r.failed_groups,
                    static_cast<unsigned long long>(r.bytes_sent));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sgd_oracle_cli: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
