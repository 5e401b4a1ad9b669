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
#include "common/training_flags.hpp"
#include "common/training_reporter.hpp"
#include "core/error.hpp"
#include "sim/compute.hpp"
#include "sgd/trainer.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA, AVB_GIT_HASH (generated at build time)

namespace {

constexpr const char* kProgram = "sgd_bench";

void define_flags(CLI::App& app, avb::app::TrainingCli& cli) {
  avb::app::define_training_flags(app, cli);
  avb::app::add_version_flag(app, kProgram, AVB_VERSION, AVB_GIT_HASH);
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

// The problem on every rank; a bad --data file or a problem too large for memory
// gives one line (empty when it was built).
std::string build_setup(const avb::TrainingOptions& options, avb::Problem& setup) {
  try {
    setup = avb::build_problem(options, MPI_COMM_WORLD);
  } catch (const avb::ConfigError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    // A --data file with a large feature index: Newton's dim x dim Hessian.
    const std::string no_fit = ": the problem does not fit in this machine's memory";
    return options.objective.data_path.empty()
               ? "--dim: " + std::to_string(options.objective.dim) + no_fit
               : "--data: " + options.objective.data_path + no_fit +
                     " (the optimum's Hessian has features x features entries)";
  }
  return "";
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
  optimum.method = options.objective.kind == avb::ObjectiveKind::quadratic ? "ldlt" : "newton";
  optimum.test_set = setup.test_set_kind;
  return optimum;
}

int run(int argc, char** argv) {
  const avb::app::World world = avb::app::world();
  const int rank = world.rank, size = world.size;
  CLI::App app{"Local SGD with decentralized averaging (avbench)", kProgram};
  avb::app::TrainingCli cli;
  define_flags(app, cli);
  avb::TrainingOptions options;
  const auto done = avb::app::parse_on_every_rank(kProgram, app, argc, argv, [&] {
    options = avb::app::training_options(cli, size);
    avb::check_simulated_time(options, world.slowest_speed);
    check_problem_memory(options, size);
  });
  if (done) return *done;

  // The data before the trace: a bad --data file is bad input, refused before
  // anything touches the folder of --out. Every rank throws the same error.
  avb::Problem setup;
  const std::string setup_problem = build_setup(options, setup);
  if (!avb::app::options_agreed(kProgram, setup_problem)) return 2;
  avb::app::RunStart start{avb::app::run_info(argc, argv, "sgd", AVB_VERSION, AVB_GIT_SHA), avb::describe(options),
                           nullptr};
  const auto warnings = avb::app::training_warnings(options, cli.protocol, size, avb::time_is_simulated());
  if (!avb::app::begin_run(kProgram, warnings, cli.output, app.config_to_str(true, false), start)) return 2;
  avb::app::TrainingReporter reporter(options, size, std::move(start.trace), cli.output.quiet);
  if (rank == 0) reporter.print_header(kProgram, start.info, start.described, optimum_record(options, setup));
  return avb::app::run_and_summarize(kProgram, rank, reporter, "evaluations",
                                     [&] { return avb::run_training(options, setup, MPI_COMM_WORLD, reporter); });
}

}  // namespace

int main(int argc, char** argv) { return avb::app::run_with_mpi(argc, argv, kProgram, run); }
