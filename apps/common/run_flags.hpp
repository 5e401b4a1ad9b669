// The flags every run has beside the protocol's (protocol_flags.hpp): the trials,
// their seed and targets, bound to the options' own fields (so that their defaults
// are declared once, in the options), and the output.
#pragma once

#include "common/trace_output.hpp"
#include "common/typed_options.hpp"
#include "run/options.hpp"

namespace avb::app {

// What a trial and a target are differs between the programs.
struct RunFlagsHelp {
  const char* trials;
  const char* target;
};

// --trials, --seed, --target and --stop-at-target in the current help group, then
// the group "Output": --out, --summary, --overwrite, --quiet, --progress-every.
void add_run_flags(TypedOptions& add, RunOptions& options, OutputFlags& output, const RunFlagsHelp& help);

}  // namespace avb::app
