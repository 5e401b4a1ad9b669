// sgd_bench's own flags and their conversion into resolved options, kept apart
// from its main() like averaging_flags.hpp (whose --config path the fuzzers feed).
#pragma once


#include "common/cli_fwd.hpp"
#include "common/engine_flags.hpp"
#include "common/protocol_flags.hpp"
#include "common/run_flags.hpp"
#include "sgd/trainer.hpp"

namespace avb::app {

// The flags bind to the options' own fields (their defaults are the library's),
// --availability's file included (read_availability).
struct TrainingCli {
  ProtocolFlags protocol;
  TrainingOptions options;  // unresolved
  OutputFlags output;
  EngineFlags engine;
  ChangedFlags changed;  // the flags above given a value other than their default
};

// Every flag, --config included (as define_averaging_flags).
void define_training_flags(CLI::App& app, TrainingCli& cli);

// Every flag given a value other than its default, the protocol's included.
ChangedFlags changed_flags(const TrainingCli& cli);

// The resolved options for n_peers; throws ConfigError naming the flag. An
// objective's or schedule's flag is refused where it does not apply.
TrainingOptions training_options(const TrainingCli& cli, int n_peers);

}  // namespace avb::app
