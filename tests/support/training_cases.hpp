// A training line of a case table: an objective by name (quadratic or logistic),
// then sgd_bench's flags, which sgd_bench's own parser reads over the suite's
// problem of that objective, and which are checked (unknown and foreign flags,
// ranges) as the program checks them.
#pragma once

#include <CLI/CLI.hpp>

#include <sstream>
#include <string>

#include "common/cli_checks.hpp"
#include "common/training_flags.hpp"
#include "support/case_tables.hpp"

namespace avb::test {

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
  parser->parse("--protocol " + c.protocol + " " + flags, false);
  app::refuse_extras(parser->remaining());  // a misspelt flag, as the program refuses it
  app::training_options(cli, n_peers);
  return cli.options;
}

}  // namespace avb::test
