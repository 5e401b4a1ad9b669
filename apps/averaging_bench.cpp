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
#include "common/protocol_flags.hpp"
#include "core/comm.hpp"
#include "core/error.hpp"
#include "run/averaging.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA (generated at build time)

namespace {

constexpr const char* kProgram = "averaging_bench";

// Values are read as text and converted by avb::app, so that every refusal is one
// line that starts with the flag and says what is accepted.
struct Cli {
  avb::app::ProtocolFlags protocol;
  std::string dim = "1";
  std::string compute_flops = "0";
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
  avb::app::add_protocol_flags(app, cli.protocol);
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

avb::AveragingOptions to_options(const Cli& cli, int n_peers) {
  using avb::app::parse_integer;
  using avb::app::parse_real;
  avb::AveragingOptions o;
  o.protocol = avb::app::protocol_options(cli.protocol);
  o.fail_rate = avb::app::fail_rate(cli.protocol);
  o.failure = avb::app::failure_kind(cli.protocol);
  o.join_rate = avb::app::join_rate(cli.protocol);
  o.stragglers = avb::app::straggler_spec(cli.protocol);
  o.detection_timeout = avb::app::detection_timeout(cli.protocol);
  o.compute_flops = avb::app::parse_real("--compute-flops", cli.compute_flops, "a number >= 0");
  o.dim = static_cast<int>(parse_integer("--dim", cli.dim, 1, 1 << 30));
  o.rounds = static_cast<int>(parse_integer("--rounds", cli.rounds, 0, 1 << 30));
  o.trials = static_cast<int>(parse_integer("--trials", cli.trials, 1, 1 << 30));
  o.seed = avb::app::parse_seed("--seed", cli.seed);
  o.targets.clear();
  for (const auto& t : cli.targets) o.targets.push_back(parse_real("--target", t, "a number > 0"));
  o.stop_at_target = cli.stop_at_target;
  o = avb::resolve(o, n_peers);
  avb::app::refuse_foreign_flags(cli.protocol, o.protocol.name);
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
  if (!avb::app::options_agreed(kProgram, problem)) return 2;

  const avb::RunInfo info = avb::app::run_info(argc, argv, "averaging", AVB_VERSION, AVB_GIT_SHA);
  auto described = avb::describe(options);
  if (!cli.out.empty()) described.emplace_back("out", cli.out);
  std::unique_ptr<avb::TraceWriter> trace;
  if (!avb::app::open_trace(kProgram, cli.out, cli.overwrite, info, described, app.config_to_str(true, false), trace))
    return 2;

  avb::app::Reporter reporter(options, std::move(trace), cli.quiet);
  reporter.set_peers(size);
  if (rank == 0) reporter.print_header(kProgram, info, described);
  const avb::AveragingResult result = avb::run_averaging(options, MPI_COMM_WORLD, reporter);
  if (rank == 0) reporter.finish(result.trials, !result.stopped);
  if (result.stopped) return 128 + (avb::app::stop_signal() ? avb::app::stop_signal() : 15);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return avb::app::run_with_mpi(argc, argv, kProgram, run); }
