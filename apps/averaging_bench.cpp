// averaging_bench: trials of one averaging protocol on N peers (one per MPI rank),
// under simulated failures, with a table on stdout and an HDF5 trace.
//
//   mpirun -n 1024 averaging_bench --protocol allreduce --fail-rate 0.01 --out run.h5
//
// Exit codes: 0 done; 2 bad input (nothing written); 128+signal when stopped by
// SIGTERM/SIGINT (the trace holds the rounds done, complete = 0); 1 other errors.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/app_support.hpp"
#include "protocols/gossip.hpp"
#include "core/comm.hpp"
#include "core/error.hpp"
#include "run/averaging.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA (generated at build time)

namespace {

constexpr const char* kProgram = "averaging_bench";

// Every value is read as text and converted here, so that every refusal is one
// line that starts with the flag and says what is accepted (CLI11's own messages
// name neither).
struct Cli {
  std::string protocol = "allreduce";
  std::string fail_rate = "0";
  std::string failure = "transient";
  std::string on_failure = "default";
  std::string collective = "auto";
  std::string grid = "default";
  std::string placement = "random";
  std::string key_update = "axis";
  std::string group_size = "32";
  std::string min_group_size = "2";
  std::string topology = "default";
  std::string weights = "uniform";
  std::string alive_weights = "renormalize";
  std::string dim = "1";
  std::string rounds = "50";
  std::string trials = "10";
  std::string seed = "0";
  std::vector<std::string> targets = {"1e-4", "1e-9"};
  bool stop_at_target = false;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

void define_flags(CLI::App& app, Cli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  // A misspelt key in a config file must not be ignored: the run would silently
  // use the default. Unknown command-line flags are collected and refused below.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  app.add_option("--protocol", cli.protocol, "averaging protocol: " + avb::protocol_names())->capture_default_str();
  app.add_option("--fail-rate", cli.fail_rate, "probability that a peer fails in a round, in [0, 1]")
      ->capture_default_str();
  app.add_option("--failure", cli.failure, "failure kind: transient (one round) or permanent")->capture_default_str();
  app.add_option("--on-failure", cli.on_failure,
                 "failure semantics: survivors, abort, partial (default: the protocol's own)")
      ->capture_default_str();
  app.add_option("--collective", cli.collective,
                 "all-reduce inside groups: auto, ring (bandwidth-optimal), doubling (latency-optimal), "
                 "tree (fewest messages: cheapest to simulate)")
      ->capture_default_str();
  app.add_option("--grid", cli.grid,
                 "moshpit: virtual grid, sides joined by 'x' such as 32x32 or 8x8x8 (default: MxM, M = "
                 "ceil(sqrt(N)))")
      ->capture_default_str();
  app.add_option("--placement", cli.placement,
                 "moshpit: peers in random distinct cells (random) or row-major by rank (rank)")
      ->capture_default_str();
  app.add_option("--key-update", cli.key_update,
                 "moshpit: average along axis (t-1) mod d (axis) or Algorithm 1's chunk-index keys (chunk)")
      ->capture_default_str();
  app.add_option("--group-size", cli.group_size, "random-groups: peers per group, an integer >= 2")
      ->capture_default_str();
  app.add_option("--min-group-size", cli.min_group_size,
                 "moshpit, random-groups: smaller groups do not average, an integer >= 2")
      ->capture_default_str();
  app.add_option("--topology", cli.topology,
                 "gossip, pushsum, pairwise: ring, torus, hypercube, exp, one-peer-exp, random-regular:K, complete or "
                 "file:PATH (default: ring for gossip, one-peer-exp for pushsum, complete for pairwise)")
      ->capture_default_str();
  app.add_option("--weights", cli.weights, "gossip: mixing weights, uniform (1/(deg+1)) or metropolis")
      ->capture_default_str();
  app.add_option("--alive-weights", cli.alive_weights,
                 "gossip under failures: renormalize rows over alive neighbours (moves the mean) or metropolis "
                 "weights of the alive subgraph (keeps it; needs --weights metropolis)")
      ->capture_default_str();
  app.add_option("--dim", cli.dim, "vector length per peer, an integer >= 1")->capture_default_str();
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

// A flag that does not apply to the chosen protocol is refused rather than
// silently ignored (the run would not be the one the user asked for). A default
// value is let through: a trace's recorded config lists every flag, and must replay.
void refuse_foreign_flags(const Cli& cli, const std::string& protocol) {
  const Cli defaults;
  const std::pair<const char*, bool> changed[] = {
      {"--collective", cli.collective != defaults.collective},
      {"--grid", cli.grid != defaults.grid},
      {"--placement", cli.placement != defaults.placement},
      {"--key-update", cli.key_update != defaults.key_update},
      {"--group-size", cli.group_size != defaults.group_size},
      {"--min-group-size", cli.min_group_size != defaults.min_group_size},
      {"--topology", cli.topology != defaults.topology},
      {"--weights", cli.weights != defaults.weights},
      {"--alive-weights", cli.alive_weights != defaults.alive_weights},
  };
  const auto own = avb::protocol_flags(protocol);
  for (const auto& [flag, set] : changed) {
    if (!set || std::find(own.begin(), own.end(), flag) != own.end()) continue;
    std::string accepted;
    for (auto f : own) accepted += (accepted.empty() ? "" : ", ") + std::string(f);
    throw avb::ConfigError(std::string(flag) + ": does not apply to --protocol " + protocol + " (its options: " +
                           (accepted.empty() ? "none" : accepted) + ")");
  }
}

avb::AveragingOptions to_options(const Cli& cli, int n_peers) {
  using avb::app::parse_integer;
  using avb::app::parse_real;
  avb::AveragingOptions o;
  o.protocol.name = cli.protocol;
  o.fail_rate = parse_real("--fail-rate", cli.fail_rate, "a number in [0, 1]");
  o.failure = avb::parse_failure_kind(cli.failure);
  if (cli.on_failure != "default") o.protocol.on_failure = avb::parse_failure_semantics(cli.on_failure);
  o.protocol.collective = avb::parse_collective(cli.collective);
  if (cli.grid != "default") o.protocol.grid = avb::parse_grid(cli.grid);
  o.protocol.placement = avb::parse_placement(cli.placement);
  o.protocol.key_update = avb::parse_key_update(cli.key_update);
  o.protocol.group_size = static_cast<int>(parse_integer("--group-size", cli.group_size, 2, 1 << 30));
  o.protocol.min_group_size = static_cast<int>(parse_integer("--min-group-size", cli.min_group_size, 2, 1 << 30));
  if (cli.topology != "default") o.protocol.topology = avb::parse_topology(cli.topology);
  o.protocol.weights = avb::parse_weights(cli.weights);
  o.protocol.alive_weights = avb::parse_alive_weights(cli.alive_weights);
  o.dim = static_cast<int>(parse_integer("--dim", cli.dim, 1, 1 << 30));
  o.rounds = static_cast<int>(parse_integer("--rounds", cli.rounds, 0, 1 << 30));
  o.trials = static_cast<int>(parse_integer("--trials", cli.trials, 1, 1 << 30));
  o.seed = avb::app::parse_seed("--seed", cli.seed);
  o.targets.clear();
  for (const auto& t : cli.targets) o.targets.push_back(parse_real("--target", t, "a number > 0"));
  o.stop_at_target = cli.stop_at_target;
  o = avb::resolve(o, n_peers);
  refuse_foreign_flags(cli, o.protocol.name);
  return o;
}

int run(int argc, char** argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  // Every rank parses the same arguments; the verdicts are combined, so that a
  // file readable on some nodes only (--config) cannot leave ranks waiting for
  // others that quit. Only rank 0 speaks.
  CLI::App app{"Decentralized averaging benchmark (avbench)", kProgram};
  Cli cli;
  define_flags(app, cli);
  avb::AveragingOptions options;
  std::string problem;
  try {
    app.parse(argc, argv);
    avb::app::refuse_extras(app.remaining());
    options = to_options(cli, size);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    problem = avb::app::explain(e);
  } catch (const avb::Error& e) {
    problem = e.what();
  }
  int parsed = problem.empty() ? 1 : 0, everywhere = 0;
  avb::check_mpi(MPI_Allreduce(&parsed, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (!everywhere) {
    avb::app::report_error(kProgram, problem.empty() ? "the options could not be read on every rank (is the "
                                                       "--config file on a file system all nodes see?)"
                                                     : problem);
    return 2;
  }

  avb::RunInfo info;
  info.avbench_version = AVB_VERSION;
  info.git_sha = AVB_GIT_SHA;
  info.command_line = avb::app::join_command_line(argc, argv);
  info.engine = avb::engine_name();
  info.mpi_library = avb::mpi_library_version();
  info.n_peers = size;
  auto described = avb::describe(options);
  if (!cli.out.empty()) described.emplace_back("out", cli.out);

  // Rank 0 alone touches the file system; the others learn whether it succeeded.
  // Stop handlers first, so that a signal cannot leave the temporary file behind.
  avb::app::install_stop_handlers();
  std::unique_ptr<avb::TraceWriter> trace;
  int trace_ok = 1;
  if (rank == 0 && !cli.out.empty()) {
    try {
      avb::app::check_out_flag(cli.out, cli.overwrite);
      trace = std::make_unique<avb::TraceWriter>(cli.out, cli.overwrite, info);
      trace->write_config(described, app.config_to_str(true, false));
    } catch (const avb::ConfigError& e) {
      avb::app::report_error(kProgram, e.what());
      trace_ok = 0;
    } catch (const avb::Error& e) {
      trace.reset();
      avb::app::report_error(kProgram, std::string("--out: ") + e.what());
      trace_ok = 0;
    }
  }
  avb::check_mpi(MPI_Bcast(&trace_ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (!trace_ok) return 2;

  avb::app::Reporter reporter(options, std::move(trace), cli.quiet);
  reporter.set_peers(size);
  if (rank == 0) reporter.print_header(kProgram, info, described);
  const avb::AveragingResult result = avb::run_averaging(options, MPI_COMM_WORLD, reporter);
  if (rank == 0) reporter.finish(result.trials, !result.stopped);
  if (result.stopped) return 128 + (avb::app::stop_signal() ? avb::app::stop_signal() : 15);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    // An error on one rank mid-run: the others may be waiting in a collective, so
    // the whole job must go down rather than hang.
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "%s: error on rank %d: %s\n", kProgram, rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}
