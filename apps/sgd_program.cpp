// sgd_bench's body (apps/sgd_bench.cpp), also run in-process by avbench._engine.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "common/app_support.hpp"
#include "common/programs.hpp"
#include "common/combinations.hpp"
#include "common/flag_values.hpp"
#include "common/listings.hpp"
#include "common/protocol_flags.hpp"
#include "common/training_flags.hpp"
#include "common/training_reporter.hpp"
#include "core/error.hpp"
#include "sim/compute.hpp"
#include "sgd/metrics.hpp"
#include "sgd/sequential_trainer.hpp"
#include "sgd/trainer.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA, AVB_GIT_HASH (generated at build time)

namespace {

constexpr const char* kProgram = "sgd_bench";

void define_flags(CLI::App& app, avb::app::TrainingCli& cli) {
  avb::app::define_training_flags(app, cli);
  avb::app::add_version_flag(app, kProgram, AVB_VERSION, AVB_GIT_HASH);
  avb::app::add_listing_flags(app, cli.protocol.declared);
}

// The problem on every rank (or of every peer, on the sequential engine:
// sequential_peers > 0); a stop signal ends the build (`stopped`, on every rank
// together); a bad --data file or a problem too large for memory gives one line
// (empty when it was built).
std::string build_setup(const avb::TrainingOptions& options, int sequential_peers, avb::Problem& setup, bool& stopped) {
  stopped = false;
  try {
    setup = sequential_peers > 0 ? avb::build_problem_sequential(options, sequential_peers, avb::app::stop_flag())
                                 : avb::build_problem(options, MPI_COMM_WORLD, avb::app::stop_flag());
  } catch (const avb::StopRequested&) {
    stopped = true;
    return "";
  } catch (const avb::ConfigError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    // A --data file with a large feature index: Newton's dim x dim Hessian.
    const std::string no_fit = ": the problem does not fit in this machine's memory";
    return options.objective.data_path.empty()
               ? "--dim: " + std::to_string(options.objective.dim) + no_fit
               : "--data " + options.objective.data_path + no_fit +
                     " (the optimum's Hessian has features x features entries)";
  }
  return "";
}

// A stop during build_setup, on every rank together: one line naming the signal
// (the one the ranks that saw it got), and the exit code 128 + signal.
int report_setup_stopped() {
  const int signal = avb::app::max_over_ranks(avb::app::stop_signal());
  avb::app::report_error(kProgram, "stopped by signal " + std::to_string(signal) +
                                       " while building the problem; nothing was written");
  return 128 + signal;
}

// What the trace records in /optimum.
avb::OptimumRecord optimum_record(const avb::TrainingOptions& options, const avb::Problem& setup) {
  avb::OptimumRecord optimum;
  optimum.x.assign(setup.optimum.x.data(), setup.optimum.x.data() + setup.optimum.x.size());
  optimum.loss = setup.optimum.loss;
  optimum.initial_loss = setup.initial_loss;
  optimum.gradient_norm = setup.optimum.gradient_norm;
  optimum.iterations = setup.optimum.iterations;
  optimum.converged = setup.optimum.converged;
  optimum.method = avb::optimum_method(options.objective.kind);
  optimum.test_set = setup.test_set_kind;
  return optimum;
}

// The run's size for the estimate: the averaging rounds plus the problem's own memory and time.
avb::RunShape training_shape(const avb::app::TrainingCli& cli, const avb::TrainingOptions& options, int peers,
                             int threads) {
  // At most one averaging round per step (geometric local steps: any step may end one).
  const double rounds = options.local_steps_dist == avb::LocalStepsDist::fixed
                            ? std::ceil(static_cast<double>(options.steps) / options.local_steps)
                            : options.steps;
  // The protocol's vectors: the model, and under --gradient-tracking its tracker too.
  const bool sequential = cli.engine.engine == avb::app::Engine::sequential;
  const int peers_here = sequential ? 1 : avb::app::peers_on_this_machine(peers, 0);  // as run_shape's
  const avb::ProblemCost problem =
      avb::problem_cost(options, peers, sequential, peers_here, sequential || avb::app::world_rank() == 0,
                        avb::app::stop_flag());
  const std::size_t model = problem.model_dim > 0 ? problem.model_dim
                                                  : static_cast<std::size_t>(std::max(1, options.objective.dim));
  const std::size_t dim = model * (options.gradient_tracking ? 2 : 1);
  avb::RunShape shape =
      avb::app::run_shape(cli.engine, options, peers, threads, dim, dim, rounds, !cli.output.out.empty());
  shape.dim_flag = problem.model_flag;
  shape.workload.insert(shape.workload.end(), problem.memory.begin(), problem.memory.end());
  shape.workload_vectors = problem.trial_vectors;
  shape.setup_seconds = problem.setup_seconds;
  shape.workload_trial_seconds = problem.trial_seconds;
  avb::app::charge_computation(shape, options, options.step_flops, "--step-flops", options.local_steps);
  return shape;
}

}  // namespace

int avb::app::training_program(int argc, char** argv) {
  const avb::app::World world = avb::app::world();
  const int rank = world.rank, size = world.size;
  const avb::app::AppPtr parser = avb::app::make_app("Local SGD with decentralized averaging (avbench)", kProgram);
  CLI::App& app = *parser;
  avb::app::TrainingCli cli;
  define_flags(app, cli);
  avb::TrainingOptions options;
  int peers = size, threads = 1;
  bool sequential = false;
  avb::RunShape shape;
  avb::RunEstimate estimate;
  const auto done = avb::app::parse_on_every_rank(kProgram, app, argc, argv, [&] {
    sequential = cli.engine.engine == avb::app::Engine::sequential;
    peers = avb::app::run_peers(cli.engine, avb::app::changed_flags(cli), size, world.slowest_speed);
    options = avb::app::training_options(cli, peers);
    threads = avb::app::run_threads(cli.engine, options.trials);
    avb::app::note_files(app, options.protocol.topology, cli.output);
    avb::check_simulated_time(options, sequential ? cli.engine.slowest.host_speed : world.slowest_speed);
    shape = training_shape(cli, options, peers, threads);
    estimate = avb::app::checked_estimate(cli.engine, options, shape, cli.output.dry_run);
    if (sequential) avb::check_sequential_form(options.protocol);
  });
  if (done) return *done;
  if (cli.output.dry_run) return avb::app::print_estimate(kProgram, cli.engine, estimate, shape);

  // The data before the trace: a bad --data file is bad input, refused before
  // anything touches the folder of --out. Every rank throws the same error.
  avb::Problem setup;
  // Building the problem can take minutes (every peer's in this process on the
  // sequential engine; the optimum of a large pooled set on rank 0 under MPI): it
  // polls the stop handlers parse_on_every_rank installed (nothing is written yet).
  bool stopped = false;
  const std::string setup_problem = build_setup(options, sequential ? peers : 0, setup, stopped);
  if (!stopped && !avb::app::options_agreed(kProgram, setup_problem)) return 2;
  if (stopped) return report_setup_stopped();
  avb::app::RunStart start{avb::app::run_info(argc, argv, "sgd", AVB_VERSION, AVB_GIT_SHA), avb::describe(options),
                           nullptr};
  avb::app::describe_engine(cli.engine, peers, start);
  auto warnings = avb::app::training_warnings(options, cli.protocol, peers, sequential || avb::time_is_simulated());
  for (std::string& w : avb::app::estimate_warnings(options, estimate, shape)) warnings.push_back(std::move(w));
  if (!avb::app::begin_run(kProgram, warnings, cli.output, avb::app::config_text(app), start)) return 2;
  avb::app::TrainingReporter reporter(options, peers, std::move(start.trace), cli.output);
  if (rank == 0)
    reporter.print_header(kProgram, start.info, start.described, optimum_record(options, setup),
                          avb::TrainingMetrics(setup).divergence_relative_gap());
  return avb::app::run_and_summarize(kProgram, rank, reporter, "evaluations", [&] {
    // Every core: those no trial runs on share the trials' local steps.
    return sequential ? avb::run_training_sequential(options, setup, peers, reporter,
                                                     avb::app::run_cores(cli.engine), cli.engine.link)
                      : avb::run_training(options, setup, MPI_COMM_WORLD, reporter);
  });
}
