// averaging_bench's body (apps/averaging_bench.cpp), also run in-process by avbench._engine.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/app_support.hpp"
#include "common/programs.hpp"
#include "common/combinations.hpp"
#include "common/listings.hpp"
#include "common/averaging_flags.hpp"
#include "common/protocol_flags.hpp"
#include "core/comm.hpp"
#include "core/error.hpp"
#include "sim/compute.hpp"
#include "run/averaging.hpp"
#include "run/sequential.hpp"
#include "trace/trace.hpp"

#include "avb_build_info.h"  // AVB_VERSION, AVB_GIT_SHA, AVB_GIT_HASH (generated at build time)

namespace {

constexpr const char* kProgram = "averaging_bench";

}  // namespace

int avb::app::averaging_program(int argc, char** argv) {
  const avb::app::World world = avb::app::world();
  const int rank = world.rank, size = world.size;
  const avb::app::AppPtr parser = avb::app::make_app("Decentralized averaging benchmark (avbench)", kProgram);
  CLI::App& app = *parser;
  avb::app::AveragingCli cli;
  avb::app::define_averaging_flags(app, cli);
  avb::app::add_version_flag(app, kProgram, AVB_VERSION, AVB_GIT_HASH);
  avb::app::add_listing_flags(app, cli.protocol.declared);
  avb::AveragingOptions options;
  int peers = size, threads = 1;
  bool sequential = false;
  avb::RunShape shape;
  avb::RunEstimate estimate;
  const auto done = avb::app::parse_on_every_rank(kProgram, app, argc, argv, [&] {
    sequential = cli.engine.engine == avb::app::Engine::sequential;
    peers = avb::app::run_peers(cli.engine, cli.protocol.changed, size, world.slowest_speed);
    options = avb::app::averaging_options(cli, peers);
    if (options.protocol.wait.policy != avb::WaitPolicy::all) avb::app::check_modelled_hosts(cli.engine);
    threads = avb::app::run_threads(cli.engine, options.trials);
    avb::app::note_files(app, options.protocol.topology, cli.output);
    avb::check_simulated_time(options, sequential ? cli.engine.slowest.host_speed : world.slowest_speed);
    shape = avb::app::run_shape(cli.engine, options, peers, threads, static_cast<std::size_t>(options.dim),
                                static_cast<std::size_t>(std::max<std::int64_t>(options.model_dim, options.dim)),
                                options.rounds, !cli.output.out.empty());
    avb::app::charge_computation(shape, options, options.compute_flops, "--compute-flops");
    estimate = avb::app::checked_estimate(cli.engine, options, shape, cli.output.dry_run);
    if (sequential) avb::check_sequential_form(options.protocol);
  });
  if (done) return *done;
  if (cli.output.dry_run) return avb::app::print_estimate(kProgram, cli.engine, estimate, shape);

  avb::app::RunStart start{avb::app::run_info(argc, argv, "averaging", AVB_VERSION, AVB_GIT_SHA),
                           avb::describe(options), nullptr};
  avb::app::describe_engine(cli.engine, peers, start);
  auto warnings = avb::app::averaging_warnings(options, cli.protocol, peers, sequential || avb::time_is_simulated());
  for (std::string& w : avb::app::estimate_warnings(options, estimate, shape)) warnings.push_back(std::move(w));
  if (!avb::app::begin_run(kProgram, warnings, cli.output, avb::app::config_text(app), start)) return 2;
  avb::app::AveragingReporter reporter(options, peers, std::move(start.trace), cli.output);
  if (rank == 0) reporter.print_header(kProgram, start.info, start.described);
  return avb::app::run_and_summarize(kProgram, rank, reporter, "rounds", [&] {
    return sequential ? avb::run_averaging_sequential(options, peers, reporter, threads, cli.engine.link)
                      : avb::run_averaging(options, MPI_COMM_WORLD, reporter, cli.engine.link);
  });
}
