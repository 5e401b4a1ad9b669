#include "common/averaging_flags.hpp"

#include <istream>
#include <iterator>
#include <sstream>

#include <CLI/CLI.hpp>

#include "common/cli_checks.hpp"

namespace avb::app {

void define_averaging_flags(CLI::App& app, AveragingCli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  // A misspelt key in a config file must not be ignored: the run would silently
  // use the default. Unknown command-line flags are collected and refused below.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  add_protocol_flags(app, cli.protocol, cli.options);
  ChangedFlags& changed = cli.protocol.changed;
  TypedOptions add(app, changed, cli.protocol.declared);
  add.group("Problem");
  add.integer("--dim", cli.options.dim, 1, 1 << 30, "vector length per peer, an integer >= 1");
  add.integer("--model-dim", cli.options.model_dim, 0, kMaxModelDim,
              "charge messages (simulated time, bytes_sent) as if vectors had this many coordinates, an integer "
              "from --dim to " + std::to_string(kMaxModelDim) + "; values keep --dim (default 0: --dim)");
  add.real("--compute-flops", cli.options.compute_flops, "a number >= 0",
           "simulated work before each round in flops, >= 0: charged at the host's speed (times a straggler's "
           "slowdown) under SMPI, ignored on real MPI");
  add.group("Schedule");
  add.integer("--rounds", cli.options.rounds, 0, 1 << 30, "rounds per trial, an integer >= 0");
  add_run_flags(add, cli.options, cli.output,
                {"independent trials, an integer >= 1 (each with its own seed drawn from --seed)",
                 "variance target > 0 (repeatable); rounds to each are reported"});
  add_engine_flags(add, cli.engine);
}

AveragingOptions averaging_options(const AveragingCli& cli, int n_peers) {
  AveragingOptions o = cli.options;
  read_availability(cli.protocol, o);
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
