#include "common/averaging_flags.hpp"

#include <istream>
#include <iterator>
#include <sstream>

#include "common/app_support.hpp"

namespace avb::app {

void define_averaging_flags(CLI::App& app, AveragingCli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  // A misspelt key in a config file must not be ignored: the run would silently
  // use the default. Unknown command-line flags are collected and refused below.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  add_protocol_flags(app, cli.protocol);
  app.add_option("--dim", cli.dim, "vector length per peer, an integer >= 1")->capture_default_str();
  app.add_option("--compute-flops", cli.compute_flops,
                 "simulated work before each round in flops, >= 0: charged at the host's speed (times a "
                 "straggler's slowdown) under SMPI, ignored on real MPI")
      ->capture_default_str();
  app.add_option("--rounds", cli.rounds, "rounds per trial, an integer >= 0")->capture_default_str();
  app.add_option("--trials", cli.trials, "independent trials, an integer >= 1 (each with its own seed drawn from --seed)")
      ->capture_default_str();
  app.add_option("--seed", cli.seed, "base seed of every random stream, an integer in [0, 2^64)")
      ->capture_default_str();
  app.add_option("--target", cli.targets, "variance target > 0 (repeatable); rounds to each are reported")
      ->capture_default_str()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--stop-at-target", cli.stop_at_target, "end a trial once every target is reached");
  app.add_option("--out", cli.out, "HDF5 trace to write (refused if it exists, unless --overwrite)");
  app.add_flag("--overwrite", cli.overwrite, "replace an existing --out file when the run ends");
  app.add_flag("--quiet", cli.quiet, "no progress lines on stderr");
}

AveragingOptions averaging_options(const AveragingCli& cli, int n_peers) {
  AveragingOptions o;
  o.protocol = protocol_options(cli.protocol);
  o.fail_rate = fail_rate(cli.protocol);
  o.failure = failure_kind(cli.protocol);
  o.join_rate = join_rate(cli.protocol);
  o.stragglers = straggler_spec(cli.protocol);
  o.detection_timeout = detection_timeout(cli.protocol);
  o.round_timeout = round_timeout(cli.protocol);
  o.compute_flops = parse_real("--compute-flops", cli.compute_flops, "a number >= 0");
  o.dim = static_cast<int>(parse_integer("--dim", cli.dim, 1, 1 << 30));
  o.rounds = static_cast<int>(parse_integer("--rounds", cli.rounds, 0, 1 << 30));
  o.trials = static_cast<int>(parse_integer("--trials", cli.trials, 1, 1 << 30));
  o.seed = parse_seed("--seed", cli.seed);
  o.targets.clear();
  for (const auto& t : cli.targets) o.targets.push_back(parse_real("--target", t, "a number > 0"));
  o.stop_at_target = cli.stop_at_target;
  o = resolve(o, n_peers);
  refuse_foreign_flags(cli.protocol, o.protocol.name);
  return o;
}

AveragingOptions averaging_options_from_config(std::istream& config, int n_peers) {
  CLI::App app{"averaging_bench", "averaging_bench"};
  AveragingCli cli;
  define_averaging_flags(app, cli);
  // CLI11 reads a --config file by handing its stream to the same formatter.
  const std::string text(std::istreambuf_iterator<char>(config), {});
  std::istringstream stream(text), again(text);
  app.parse_from_stream(stream);
  refuse_extras(app.remaining());
  refuse_repeated_config_keys(app, app.get_config_formatter_base()->from_config(again));
  return averaging_options(cli, n_peers);
}

}  // namespace avb::app
