// sgd_bench's own flags and their conversion into resolved options, kept apart
// from its main() like averaging_flags.hpp, so that the oracle CLI reads the very
// same options (tests/oracle/sgd_oracle_cli.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/protocol_flags.hpp"
#include "sgd/trainer.hpp"

namespace avb::app {

// Typed fields, converted as CLI11 reads them (typed_options.hpp); the defaults are
// the library's (ObjectiveOptions, LearningRate).
struct TrainingCli {
  ProtocolFlags protocol;
  ObjectiveOptions objective;  // the problem
  std::string test_data;
  // the optimiser
  int steps = 1000;
  int local_steps = 1;
  LocalStepsDist local_steps_dist = LocalStepsDist::fixed;
  double step_flops = 0;
  int batch = 1;
  LearningRate lr;
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
  ChangedFlags changed;  // the flags above given a value other than their default
};

// Every flag, --config included (as define_averaging_flags).
void define_training_flags(CLI::App& app, TrainingCli& cli);

// The resolved options for n_peers; throws ConfigError naming the flag. An
// objective's or schedule's flag is refused where it does not apply.
TrainingOptions training_options(const TrainingCli& cli, int n_peers);

}  // namespace avb::app
