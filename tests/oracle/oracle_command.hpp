// What the two oracle commands (oracle_cli, sgd_oracle_cli) share: a --peers flag
// next to the app's own, and one way to end: --help printed; a refused flag or a
// failed run reported as one line "NAME: error: ..." on stderr with exit code 2,
// as the apps do.
#pragma once

#include <functional>

#include "common/cli_fwd.hpp"

namespace avb::oracle {

// Adds --peers to APP, which holds the app's flags, parses ARGV, and calls
// PRINT_ROWS(peers) to print the oracle's CSV; returns the exit code.
int run_command(CLI::App& app, int argc, char** argv, const std::function<void(int)>& print_rows);

}  // namespace avb::oracle
