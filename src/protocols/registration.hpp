// Protocols from outside the library: a program of its own that links avbench
// (the installed package, docs/architecture.md "Using avbench as a library") adds
// its protocol's catalog row at run time instead of editing catalog.cpp.
#pragma once

#include "protocols/protocol.hpp"

namespace avb {

// Adds `info` to the catalog, after the built-in rows; from then on its name
// reaches it like any other (protocol_info, resolve, make_protocol,
// make_sequential_protocol, describe). Call it before any run and from one
// thread: references into the catalog do not survive it. The row's strings must
// outlive the program (string literals do). Its flags must be ones some built-in
// protocol takes (the programs declare no others), with default_topology set
// exactly when they include --topology. Registering the same row again (same
// name and factories) does nothing, as under SMPI, where every simulated rank runs
// main() in one process; another row under a taken name, or a row without a name,
// summary or factory, throws Error.
void register_protocol(const ProtocolInfo& info);

}  // namespace avb
