// The flags that choose and tune a protocol and its failures, shared by
// averaging_bench and sgd_bench so that both read them alike.
#pragma once

#include <string>

#include "common/cli_fwd.hpp"
#include "common/typed_options.hpp"
#include "run/options.hpp"

namespace avb::app {

// What the protocol's and the failures' flags leave beside the options they set
// (each bound to its field from its declaration: protocols/options.hpp,
// run/options.hpp).
struct ProtocolFlags {
  ChangedFlags changed;  // the flags given a value other than their default
  FlagTable declared;    // every typed flag of the program, for --list-flags
};

// Adds --protocol, its settings and the failures' flags under the help groups
// "Protocol" and "Failures", bound to `options`.
void add_protocol_flags(CLI::App& app, ProtocolFlags& flags, RunOptions& options);

// Reads --availability's file, which also implies --failure trace unless
// --failure was given.
void read_availability(const ProtocolFlags& protocol, RunOptions& options);

// A flag that does not apply to the chosen protocol (the catalog's
// protocol_flags()) is refused rather than silently ignored (the run would not be
// the one the user asked for). A default value is let through: a trace's recorded
// config lists every flag, and must replay.
void refuse_foreign_flags(const ProtocolFlags& flags, const std::string& protocol);

}  // namespace avb::app
