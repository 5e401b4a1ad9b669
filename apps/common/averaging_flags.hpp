// averaging_bench's own flags and their conversion into resolved options, kept
// apart from its main() so that the path from a --config file to options can run
// without MPI, files or exit(): tests/fuzz/fuzz_config.cpp feeds it arbitrary bytes.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/protocol_flags.hpp"
#include "run/averaging.hpp"

namespace avb::app {

// Values are read as text and converted by avb::app, so that every refusal is one
// line that starts with the flag and says what is accepted.
struct AveragingCli {
  ProtocolFlags protocol;
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

// Every flag, --config included; unknown config keys are errors, unknown
// command-line arguments are collected for refuse_extras().
void define_averaging_flags(CLI::App& app, AveragingCli& cli);

// The resolved options for n_peers; throws ConfigError naming the flag.
AveragingOptions averaging_options(const AveragingCli& cli, int n_peers);

// What `averaging_bench --config FILE` resolves to on n_peers, FILE's text read
// from `config`. Throws CLI::ParseError (see explain()) or avb::Error, exactly as
// the app's own parse does.
AveragingOptions averaging_options_from_config(std::istream& config, int n_peers);

}  // namespace avb::app
