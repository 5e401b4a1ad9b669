// A line of a case table as a run's options: the programs' own parsers read its
// flags over a suite's base options and check them (unknown and foreign flags,
// ranges) as the programs do.
#pragma once

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

#include "common/averaging_flags.hpp"
#include "common/cli_checks.hpp"
#include "common/training_flags.hpp"
#include "support/case_tables.hpp"

namespace avb::test {

// Parses `flags` after --protocol `protocol` with `parser`, refusing what the
// program refuses (a misspelt flag included).
inline void parse_line(CLI::App& parser, const std::string& protocol, const std::string& flags) {
  parser.parse("--protocol " + protocol + " " + flags, false);
  app::refuse_extras(parser.remaining());
}

// averaging_bench's flags over `base`, for --protocol `protocol`: the options
// resolved for n_peers (ConfigError when they cannot be, or a flag is wrong).
inline AveragingOptions averaging_case(const std::string& protocol, const std::string& flags, int n_peers,
                                       const AveragingOptions& base) {
  app::AveragingCli cli;
  cli.options = base;
  cli.options.protocol.name = protocol;
  const app::AppPtr parser = app::make_app("a case table's line", "averaging_bench");
  app::define_averaging_flags(*parser, cli);
  parse_line(*parser, protocol, flags);
  return app::averaging_options(cli, n_peers);
}

// A training line: an objective by name (quadratic or logistic), then sgd_bench's
// flags, read over the suite's problem of that objective.
// base(logistic): the suite's options for the objective, before the line's flags.
// Returns the options unresolved, having resolved them once for n_peers to check them.
template <class Base>
TrainingOptions training_case(const TableCase& c, int n_peers, Base base) {
  if (!c.problem.empty()) throw ConfigError(c.problem);
  std::istringstream words(c.flags);
  std::string objective, flags;
  words >> objective;
  std::getline(words, flags);
  if (objective != "quadratic" && objective != "logistic")
    throw ConfigError(c.protocol + ": a training case starts with quadratic or logistic, not '" + objective + "'");
  app::TrainingCli cli;
  cli.options = base(objective == "logistic");
  cli.options.protocol.name = c.protocol;
  const app::AppPtr parser = app::make_app("a case table's training line", "sgd_bench");
  app::define_training_flags(*parser, cli);
  parse_line(*parser, c.protocol, flags);
  app::training_options(cli, n_peers);
  return cli.options;
}

}  // namespace avb::test
