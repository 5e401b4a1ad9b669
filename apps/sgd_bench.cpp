// sgd_bench: local SGD on N peers (one per MPI rank) with any averaging protocol,
// on a quadratic or logistic problem, under simulated failures; a table on stdout
// and an HDF5 trace.
//
//   mpirun -n 64 sgd_bench --protocol moshpit --objective quadratic --steps 500 --out run.h5
//
// Exit codes as averaging_bench: 0 done; 2 bad input (nothing written); 128+signal
// when stopped by SIGTERM/SIGINT (the trace holds what was measured, complete = 0);
// 1 other errors.
#include <mpi.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "common/app_support.hpp"
#include "common/combinations.hpp"
#include "common/protocol_flags.hpp"
#include "common/training_reporter.hpp"
#include "core/error.hpp"
#include "sim/compute.hpp"
#include "sgd/trainer.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA (generated at build time)

namespace {

constexpr const char* kProgram = "sgd_bench";

struct Cli {
  avb::app::ProtocolFlags protocol;
  // the problem
  std::string objective = "quadratic";
  std::string dim = "10";
  std::string preset = "epfl";
  std::string condition = "100";
  std::string zeta = "1";
  std::string sigma = "0";
  std::string data;
  std::string data_dim = "0";
  std::string split = "random";
  std::string test_data;
  std::string samples_per_peer = "100";
  std::string separation = "1";
  std::string label_skew = "0";
  // the optimiser
  std::string steps = "1000";
  std::string local_steps = "1";
  std::string local_steps_dist = "fixed";
  std::string step_flops = "0";
  std::string batch = "1";
  std::string lr = "0.01";
  std::string lr_schedule = "constant";
  std::string lr_decay_steps = "100";
  std::string lr_decay_factor = "0.5";
  std::string momentum = "0";
  std::string eval_every = "10";
  // the run
  std::string trials = "1";
  std::string seed = "0";
  std::vector<std::string> targets = {"1e-3", "1e-6"};
  bool stop_at_target = false;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
};

void define_flags(CLI::App& app, Cli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  avb::app::add_protocol_flags(app, cli.protocol);
  auto opt = [&](const char* flag, std::string& value, const std::string& help) {
    app.add_option(flag, value, help)->capture_default_str();
  };
  opt("--objective", cli.objective, "quadratic or logistic (L2-regularised logistic regression)");
  opt("--dim", cli.dim, "quadratic, synthetic logistic: model dimension, an integer >= 1");
  opt("--preset", cli.preset,
      "quadratic: epfl (A_i = (i/sqrt N) I, b_i ~ N(0, zeta^2/i^2 I)) or conditioned (one diagonal A for all, "
      "condition number --condition)");
  opt("--condition", cli.condition, "quadratic, preset conditioned: condition number of the Hessian, >= 1");
  opt("--zeta", cli.zeta, "quadratic: heterogeneity, the scale of the b_i, >= 0");
  opt("--sigma", cli.sigma, "quadratic: gradient noise N(0, sigma^2/(d B) I) per step, >= 0");
  opt("--data", cli.data, "logistic: LIBSVM file (such as a9a or w8a); without it, synthetic Gaussian classes");
  opt("--data-dim", cli.data_dim, "logistic with --data: feature count, 0 = the largest index in the file");
  opt("--split", cli.split, "logistic with --data: shards random or label-sorted (heterogeneous)");
  opt("--test-data", cli.test_data,
      "logistic with --data: LIBSVM file for the accuracy column (default: the training set)");
  opt("--samples-per-peer", cli.samples_per_peer, "synthetic logistic: samples per peer, an integer >= 1");
  opt("--separation", cli.separation, "synthetic logistic: class means at +-separation along one direction, >= 0");
  opt("--label-skew", cli.label_skew,
      "synthetic logistic: in [0, 1]; share (1 + s)/2 of a peer's samples has its majority label");
  opt("--steps", cli.steps, "SGD steps per trial, an integer >= 0");
  opt("--local-steps", cli.local_steps, "SGD steps between averaging rounds (H), an integer >= 1");
  opt("--local-steps-dist", cli.local_steps_dist,
      "fixed (H steps) or geometric (mean H, drawn per peer and round; --protocol swarm only)");
  opt("--step-flops", cli.step_flops,
      "simulated cost of one local step in flops, >= 0: charged at the host's speed under SMPI, ignored on real MPI");
  opt("--batch", cli.batch, "minibatch per peer and step, an integer >= 1");
  opt("--lr", cli.lr, "learning rate at step 0, > 0");
  opt("--lr-schedule", cli.lr_schedule,
      "constant, inverse (lr T/(t + T)) or step (lr factor^floor(t/T)), T = --lr-decay-steps");
  opt("--lr-decay-steps", cli.lr_decay_steps, "inverse, step: T, an integer >= 1");
  opt("--lr-decay-factor", cli.lr_decay_factor, "step: factor in (0, 1]");
  opt("--momentum", cli.momentum, "heavy-ball momentum in [0, 1), kept per peer");
  opt("--eval-every", cli.eval_every, "measure every this many steps (and after the last), an integer >= 1");
  opt("--trials", cli.trials, "independent trials (own minibatches and failures), an integer >= 1");
  opt("--seed", cli.seed, "base seed of every random stream, an integer in [0, 2^64)");
  app.add_option("--target", cli.targets,
                 "relative gap target (f(x) - f*)/(f(x0) - f*) > 0 (repeatable); steps to each are reported")
      ->capture_default_str()
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--stop-at-target", cli.stop_at_target, "end a trial once every target is reached");
  app.add_option("--out", cli.out, "HDF5 trace to write (refused if it exists, unless --overwrite)");
  app.add_flag("--overwrite", cli.overwrite, "replace an existing --out file when the run ends");
  app.add_flag("--quiet", cli.quiet, "no progress lines on stderr");
}

// Like a protocol's flags, an objective's or schedule's flags are refused where
// they do not apply, unless left at their default.
void refuse_foreign_problem_flags(const Cli& cli, const avb::TrainingOptions& o) {
  const Cli defaults;
  const bool quadratic = o.objective.kind == avb::ObjectiveKind::quadratic;
  const bool file = !quadratic && !o.objective.data_path.empty();
  const bool synthetic = !quadratic && !file;
  struct Rule {
    const char* flag;
    bool changed;
    bool applies;
    const char* where;
  };
  const Rule rules[] = {
      {"--dim", cli.dim != defaults.dim, !file, "--objective quadratic or synthetic logistic (a --data file has its own)"},
      {"--preset", cli.preset != defaults.preset, quadratic, "--objective quadratic"},
      {"--condition", cli.condition != defaults.condition,
       quadratic && o.objective.preset == avb::QuadraticPreset::conditioned, "--preset conditioned"},
      {"--zeta", cli.zeta != defaults.zeta, quadratic, "--objective quadratic"},
      {"--sigma", cli.sigma != defaults.sigma, quadratic, "--objective quadratic"},
      {"--data", !cli.data.empty(), !quadratic, "--objective logistic"},
      {"--data-dim", cli.data_dim != defaults.data_dim, file, "--objective logistic with --data"},
      {"--split", cli.split != defaults.split, file, "--objective logistic with --data"},
      {"--samples-per-peer", cli.samples_per_peer != defaults.samples_per_peer, synthetic,
       "synthetic logistic data (no --data)"},
      {"--separation", cli.separation != defaults.separation, synthetic, "synthetic logistic data (no --data)"},
      {"--label-skew", cli.label_skew != defaults.label_skew, synthetic, "synthetic logistic data (no --data)"},
      {"--lr-decay-steps", cli.lr_decay_steps != defaults.lr_decay_steps,
       o.lr.schedule != avb::LrSchedule::constant, "--lr-schedule inverse or step"},
      {"--lr-decay-factor", cli.lr_decay_factor != defaults.lr_decay_factor, o.lr.schedule == avb::LrSchedule::step,
       "--lr-schedule step"},
  };
  for (const Rule& r : rules)
    if (r.changed && !r.applies) throw avb::ConfigError(std::string(r.flag) + ": applies only to " + r.where);
}

avb::TrainingOptions to_options(const Cli& cli, int n_peers) {
  using avb::app::parse_integer;
  using avb::app::parse_real;
  constexpr long long kMaxInt = (1LL << 31) - 1;
  avb::TrainingOptions o;
  o.protocol = avb::app::protocol_options(cli.protocol);
  o.fail_rate = avb::app::fail_rate(cli.protocol);
  o.failure = avb::app::failure_kind(cli.protocol);
  o.join_rate = avb::app::join_rate(cli.protocol);
  o.stragglers = avb::app::straggler_spec(cli.protocol);
  o.detection_timeout = avb::app::detection_timeout(cli.protocol);
  o.round_timeout = avb::app::round_timeout(cli.protocol);

  avb::ObjectiveOptions& f = o.objective;
  f.kind = avb::parse_objective_kind(cli.objective);
  f.dim = static_cast<int>(parse_integer("--dim", cli.dim, 1, 1 << 24));
  f.preset = avb::parse_quadratic_preset(cli.preset);
  f.condition = parse_real("--condition", cli.condition, "a number >= 1");
  f.heterogeneity = parse_real("--zeta", cli.zeta, "a number >= 0");
  f.gradient_noise = parse_real("--sigma", cli.sigma, "a number >= 0");
  f.data_path = cli.data;
  f.data_dim = static_cast<int>(parse_integer("--data-dim", cli.data_dim, 0, 1 << 24));
  f.split = avb::parse_data_split(cli.split);
  f.samples_per_peer = static_cast<int>(parse_integer("--samples-per-peer", cli.samples_per_peer, 1, 1 << 24));
  f.separation = parse_real("--separation", cli.separation, "a number >= 0");
  f.label_skew = parse_real("--label-skew", cli.label_skew, "a number in [0, 1]");
  o.test_data = cli.test_data;

  o.steps = static_cast<int>(parse_integer("--steps", cli.steps, 0, kMaxInt));
  o.local_steps = static_cast<int>(parse_integer("--local-steps", cli.local_steps, 1, kMaxInt));
  o.local_steps_dist = avb::parse_local_steps_dist(cli.local_steps_dist);
  o.step_flops = parse_real("--step-flops", cli.step_flops, "a number >= 0");
  if (cli.protocol.clock != avb::app::ProtocolFlags{}.clock)
    throw avb::ConfigError("--clock: applies to averaging_bench only (in sgd_bench a swarm peer initiates after its "
                           "local steps: --local-steps, --local-steps-dist)");
  o.batch = static_cast<int>(parse_integer("--batch", cli.batch, 1, 1 << 24));
  o.lr.lr = parse_real("--lr", cli.lr, "a number > 0");
  o.lr.schedule = avb::parse_lr_schedule(cli.lr_schedule);
  o.lr.decay_steps = static_cast<int>(parse_integer("--lr-decay-steps", cli.lr_decay_steps, 1, kMaxInt));
  o.lr.decay_factor = parse_real("--lr-decay-factor", cli.lr_decay_factor, "a number in (0, 1]");
  o.momentum = parse_real("--momentum", cli.momentum, "a number in [0, 1)");
  o.eval_every = static_cast<int>(parse_integer("--eval-every", cli.eval_every, 1, kMaxInt));
  o.trials = static_cast<int>(parse_integer("--trials", cli.trials, 1, 1 << 30));
  o.seed = avb::app::parse_seed("--seed", cli.seed);
  o.targets.clear();
  for (const auto& t : cli.targets) o.targets.push_back(parse_real("--target", t, "a number > 0"));
  o.stop_at_target = cli.stop_at_target;
  o = avb::resolve(o, n_peers);
  avb::app::refuse_foreign_flags(cli.protocol, o.protocol.name);
  refuse_foreign_problem_flags(cli, o);
  return o;
}

// What the problem takes per peer, which holds the pooled problem of all N peers
// to compute the optimum: a quadratic's two dim x N matrices; a synthetic logistic
// problem's samples and Newton's dim x dim Hessian (twice, with its LDLT).
// A --data file's size is known only once read: see the std::bad_alloc below.
void check_problem_memory(const Cli& cli, const avb::TrainingOptions& o, int n_peers) {
  const double d = o.objective.dim, n = n_peers, word = sizeof(double);
  if (o.objective.kind == avb::ObjectiveKind::quadratic) {
    avb::app::check_memory("--dim", cli.dim, word * d * (2 * n + 16), n_peers);
  } else if (o.objective.data_path.empty()) {
    avb::app::check_memory("--dim", cli.dim, word * (2 * d * d + 16 * d), n_peers);
    avb::app::check_memory("--samples-per-peer", cli.samples_per_peer,
                           word * (2 * d * d + 16 * d + 2 * n * o.objective.samples_per_peer * (d + 1)), n_peers);
  }
}

int run(int argc, char** argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  CLI::App app{"Local SGD with decentralized averaging (avbench)", kProgram};
  Cli cli;
  define_flags(app, cli);
  avb::TrainingOptions options;
  const double slowest_speed = avb::app::slowest_peer_speed();
  std::string problem;
  try {
    app.parse(argc, argv);
    avb::app::refuse_extras(app, argc, argv);
    avb::app::refuse_repeated_config_keys(app);
    options = to_options(cli, size);
    avb::check_simulated_time(options, slowest_speed);
    check_problem_memory(cli, options, size);
  } catch (const CLI::CallForHelp&) {
    if (rank == 0) std::printf("%s", app.help().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    problem = avb::app::explain(e);
  } catch (const avb::Error& e) {
    problem = e.what();
  }
  if (!avb::app::options_agreed(kProgram, problem)) return 2;

  // The data before the trace: a bad --data file is bad input, refused before
  // anything touches the folder of --out. Every rank throws the same error.
  avb::Problem setup;
  std::string setup_problem;
  try {
    setup = avb::build_problem(options, MPI_COMM_WORLD);
  } catch (const avb::ConfigError& e) {
    setup_problem = e.what();
  } catch (const std::bad_alloc&) {
    // A --data file with a large feature index: Newton's dim x dim Hessian.
    setup_problem = options.objective.data_path.empty()
                        ? "--dim: " + cli.dim + ": the problem does not fit in this machine's memory"
                        : "--data: " + cli.data + ": the problem does not fit in this machine's memory (the "
                                                     "optimum's Hessian has features x features entries)";
  }
  if (!avb::app::options_agreed(kProgram, setup_problem)) return 2;
  for (const std::string& line : avb::app::training_warnings(options, cli.protocol, size, avb::time_is_simulated()))
    avb::app::report_warning(kProgram, line);

  const avb::RunInfo info = avb::app::run_info(argc, argv, "sgd", AVB_VERSION, AVB_GIT_SHA);
  auto described = avb::describe(options);
  if (!cli.out.empty()) described.emplace_back("out", cli.out);
  std::unique_ptr<avb::TraceWriter> trace;
  if (!avb::app::open_trace(kProgram, cli.out, cli.overwrite, info, described, app.config_to_str(true, false), trace))
    return 2;

  avb::app::TrainingReporter reporter(options, size, std::move(trace), cli.quiet);
  if (rank == 0) {
    avb::OptimumRecord optimum;
    optimum.x.assign(setup.optimum.x.data(), setup.optimum.x.data() + setup.optimum.x.size());
    optimum.loss = setup.optimum.loss;
    optimum.initial_loss = setup.initial_loss;
    optimum.gradient_norm = setup.optimum.gradient_norm;
    optimum.iterations = setup.optimum.iterations;
    optimum.converged = setup.optimum.converged;
    optimum.method = options.objective.kind == avb::ObjectiveKind::quadratic ? "ldlt" : "newton";
    optimum.test_set = setup.test_set_kind;
    reporter.print_header(kProgram, info, described, optimum);
  }
  const avb::TrainingResult result = avb::app::run_guarded(
      kProgram, rank, reporter, [&] { return avb::run_training(options, setup, MPI_COMM_WORLD, reporter); });
  if (rank == 0) {
    reporter.finish(result.trials, !result.stopped);
    avb::app::warn_persistent_decode_failures(kProgram, result.trials, "evaluations");
  }
  return avb::app::exit_code(kProgram, reporter.trace_error(), result.stopped);
}

}  // namespace

int main(int argc, char** argv) { return avb::app::run_with_mpi(argc, argv, kProgram, run); }
