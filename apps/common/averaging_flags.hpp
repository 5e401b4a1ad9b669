// averaging_bench's own flags and their conversion into resolved options, kept
// apart from its main() so that the path from a --config file to options can run
// without MPI, files or exit(): tests/fuzz/fuzz_config.cpp feeds it arbitrary bytes.
#pragma once

#include <iosfwd>

#include "common/cli_fwd.hpp"
#include "common/engine_flags.hpp"
#include "common/protocol_flags.hpp"
#include "common/run_flags.hpp"
#include "run/averaging.hpp"

namespace avb::app {

// The flags bind to the options' own fields (their defaults are the options'),
// --availability's file included (read_availability).
struct AveragingCli {
  ProtocolFlags protocol;
  AveragingOptions options;  // unresolved
  OutputFlags output;
  EngineFlags engine;
};

// Every flag, --config included; unknown config keys are errors, unknown
// command-line arguments are collected for refuse_extras(). A bad value throws
// avb::ConfigError from app.parse().
void define_averaging_flags(CLI::App& app, AveragingCli& cli);

// The resolved options for n_peers; throws ConfigError naming the flag.
AveragingOptions averaging_options(const AveragingCli& cli, int n_peers);

// What `averaging_bench --config FILE` resolves to on n_peers, FILE's text read
// from `config`. Throws CLI::ParseError (see explain()) or avb::Error, exactly as
// the app's own parse does.
AveragingOptions averaging_options_from_config(std::istream& config, int n_peers);

}  // namespace avb::app
