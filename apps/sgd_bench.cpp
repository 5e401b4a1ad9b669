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

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA, AVB_GIT_HASH (generated at build time)

namespace {

constexpr const char* kProgram = "sgd_bench";

struct Cli {
  avb::app::ProtocolFlags protocol;
  avb::ObjectiveOptions objective;  // the problem
  std::string test_data;
  // the optimiser
  int steps = 1000;
  int local_steps = 1;
  avb::LocalStepsDist local_steps_dist = avb::LocalStepsDist::fixed;
  double step_flops = 0;
  int batch = 1;
  avb::LearningRate lr;
  double momentum = 0;
  int eval_every = 10;
  // the run
  int trials = 1;
  std::uint64_t seed = 0;
  std::vector<double> targets = {1e-3, 1e-6};
  bool stop_at_target = false;
  std::string out;
  bool overwrite = false;
  bool quiet = false;
  avb::app::ChangedFlags changed;  // the flags above given a value other than their default
};

constexpr long long kMaxInt = (1LL << 31) - 1;

void define_problem_flags(avb::app::TypedOptions& add, Cli& cli) {
  avb::ObjectiveOptions& f = cli.objective;
  add.group("Problem");
  add.word("--objective", f.kind, avb::kObjectiveKindNames,
           "quadratic or logistic (L2-regularised logistic regression)");
  add.integer("--dim", f.dim, 1, 1 << 24, "quadratic, synthetic logistic: model dimension, an integer >= 1");
  add.word("--preset", f.preset, avb::kQuadraticPresetNames,
           "quadratic: epfl (A_i = (i/sqrt N) I, b_i ~ N(0, zeta^2/i^2 I)) or conditioned (one diagonal A for all, "
           "condition number --condition)");
  add.real("--condition", f.condition, "a number >= 1",
           "quadratic, preset conditioned: condition number of the Hessian, >= 1");
  add.real("--zeta", f.heterogeneity, "a number >= 0", "quadratic: heterogeneity, the scale of the b_i, >= 0");
  add.real("--sigma", f.gradient_noise, "a number >= 0",
           "quadratic: gradient noise N(0, sigma^2/(d B) I) per step, >= 0");
  add.text("--data", f.data_path, "FILE",
           "logistic: LIBSVM file (such as a9a or w8a); without it, synthetic Gaussian classes");
  add.integer("--data-dim", f.data_dim, 0, 1 << 24,
              "logistic with --data: feature count, 0 = the largest index in the file");
  add.word("--split", f.split, avb::kDataSplitNames,
           "logistic with --data: shards random or label-sorted (heterogeneous)");
  add.text("--test-data", cli.test_data, "FILE",
           "logistic with --data: LIBSVM file for the accuracy column (default: the training set)");
  add.integer("--samples-per-peer", f.samples_per_peer, 1, 1 << 24,
              "synthetic logistic: samples per peer, an integer >= 1");
  add.real("--separation", f.separation, "a number >= 0",
           "synthetic logistic: class means at +-separation along one direction, >= 0");
  add.real("--label-skew", f.label_skew, "a number in [0, 1]",
           "synthetic logistic: in [0, 1]; share (1 + s)/2 of a peer's samples has its majority label");
}

void define_schedule_flags(avb::app::TypedOptions& add, Cli& cli) {
  add.group("Schedule");
  add.integer("--steps", cli.steps, 0, kMaxInt, "SGD steps per trial, an integer >= 0");
  add.integer("--local-steps", cli.local_steps, 1, kMaxInt, "SGD steps between averaging rounds (H), an integer >= 1");
  add.word("--local-steps-dist", cli.local_steps_dist, avb::kLocalStepsDistNames,
           "fixed (H steps) or geometric (mean H, drawn per peer and round; --protocol swarm only)");
  add.real("--step-flops", cli.step_flops, "a number >= 0",
           "simulated cost of one local step in flops, >= 0: charged at the host's speed under SMPI, ignored on real "
           "MPI");
  add.integer("--batch", cli.batch, 1, 1 << 24, "minibatch per peer and step, an integer >= 1");
  add.real("--lr", cli.lr.lr, "a number > 0", "learning rate at step 0, > 0");
  add.word("--lr-schedule", cli.lr.schedule, avb::kLrScheduleNames,
           "constant, inverse (lr T/(t + T)) or step (lr factor^floor(t/T)), T = --lr-decay-steps");
  add.integer("--lr-decay-steps", cli.lr.decay_steps, 1, kMaxInt, "inverse, step: T, an integer >= 1");
  add.real("--lr-decay-factor", cli.lr.decay_factor, "a number in (0, 1]", "step: factor in (0, 1]");
  add.real("--momentum", cli.momentum, "a number in [0, 1)", "heavy-ball momentum in [0, 1), kept per peer");
  add.integer("--eval-every", cli.eval_every, 1, kMaxInt,
              "measure every this many steps (and after the last), an integer >= 1");
  add.integer("--trials", cli.trials, 1, 1 << 30, "independent trials (own minibatches and failures), an integer >= 1");
  add.seed("--seed", cli.seed, "base seed of every random stream, an integer in [0, 2^64)");
  add.reals("--target", cli.targets, "a number > 0",
            "relative gap target (f(x) - f*)/(f(x0) - f*) > 0 (repeatable); steps to each are reported");
  add.flag("--stop-at-target", cli.stop_at_target, "end a trial once every target is reached");
}

void define_flags(CLI::App& app, Cli& cli) {
  app.set_config("--config", "", "read options from a TOML/INI file (flag = value per line)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.allow_extras();
  avb::app::add_version_flag(app, kProgram, AVB_VERSION, AVB_GIT_HASH);
  avb::app::add_protocol_flags(app, cli.protocol);
  avb::app::TypedOptions add(app, cli.changed);
  define_problem_flags(add, cli);
  define_schedule_flags(add, cli);
  avb::app::add_output_flags(add, cli.out, cli.overwrite, cli.quiet);
}

// Like a protocol's flags, an objective's or schedule's flags are refused where
// they do not apply, unless left at their default.
void refuse_foreign_problem_flags(const Cli& cli, const avb::TrainingOptions& o) {
  const bool quadratic = o.objective.kind == avb::ObjectiveKind::quadratic;
  const bool file = !quadratic && !o.objective.data_path.empty();
  const bool synthetic = !quadratic && !file;
  struct Rule {
    const char* flag;
    bool applies;
    const char* where;
  };
  const Rule rules[] = {
      {"--dim", !file, "--objective quadratic or synthetic logistic (a --data file has its own)"},
      {"--preset", quadratic, "--objective quadratic"},
      {"--condition", quadratic && o.objective.preset == avb::QuadraticPreset::conditioned, "--preset conditioned"},
      {"--zeta", quadratic, "--objective quadratic"},
      {"--sigma", quadratic, "--objective quadratic"},
      {"--data", !quadratic, "--objective logistic"},
      {"--data-dim", file, "--objective logistic with --data"},
      {"--split", file, "--objective logistic with --data"},
      {"--samples-per-peer", synthetic, "synthetic logistic data (no --data)"},
      {"--separation", synthetic, "synthetic logistic data (no --data)"},
      {"--label-skew", synthetic, "synthetic logistic data (no --data)"},
      {"--lr-decay-steps", o.lr.schedule != avb::LrSchedule::constant, "--lr-schedule inverse or step"},
      {"--lr-decay-factor", o.lr.schedule == avb::LrSchedule::step, "--lr-schedule step"},
  };
  for (const Rule& r : rules)
    if (cli.changed.count(r.flag) && !r.applies)
      throw avb::ConfigError(std::string(r.flag) + ": applies only to " + r.where);
}

avb::TrainingOptions to_options(const Cli& cli, int n_peers) {
  avb::TrainingOptions o;
  o.protocol = avb::app::protocol_options(cli.protocol);
  o.fail_rate = cli.protocol.fail_rate;
  o.failure = cli.protocol.failure;
  o.join_rate = cli.protocol.join_rate;
  o.stragglers = avb::app::straggler_spec(cli.protocol);
  o.detection_timeout = cli.protocol.detection_timeout;
  o.round_timeout = cli.protocol.round_timeout;
  o.objective = cli.objective;
  o.test_data = cli.test_data;
  o.steps = cli.steps;
  o.local_steps = cli.local_steps;
  o.local_steps_dist = cli.local_steps_dist;
  o.step_flops = cli.step_flops;
  if (cli.protocol.changed.count("--clock"))
    throw avb::ConfigError("--clock: applies to averaging_bench only (in sgd_bench a swarm peer initiates after its "
                           "local steps: --local-steps, --local-steps-dist)");
  o.batch = cli.batch;
  o.lr = cli.lr;
  o.momentum = cli.momentum;
  o.eval_every = cli.eval_every;
  o.trials = cli.trials;
  o.seed = cli.seed;
  o.targets = cli.targets;
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
void check_problem_memory(const avb::TrainingOptions& o, int n_peers) {
  const double d = o.objective.dim, n = n_peers, word = sizeof(double);
  if (o.objective.kind == avb::ObjectiveKind::quadratic) {
    avb::app::check_memory("--dim", std::to_string(o.objective.dim), word * d * (2 * n + 16), n_peers);
  } else if (o.objective.data_path.empty()) {
    avb::app::check_memory("--dim", std::to_string(o.objective.dim), word * (2 * d * d + 16 * d), n_peers);
    avb::app::check_memory("--samples-per-peer", std::to_string(o.objective.samples_per_peer),
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
  if (avb::app::parse_command_line(app, argc, argv, rank, problem, [&] {
      options = to_options(cli, size);
      avb::check_simulated_time(options, slowest_speed);
      check_problem_memory(options, size);
        }))
    return 0;
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
    const std::string no_fit = ": the problem does not fit in this machine's memory";
    setup_problem = options.objective.data_path.empty()
                        ? "--dim: " + std::to_string(options.objective.dim) + no_fit
                        : "--data: " + options.objective.data_path + no_fit +
                              " (the optimum's Hessian has features x features entries)";
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
