// --list-protocols and --list-flags: the catalog and the program's flags as
// tab-separated lines, so that tests and scripts generate their "every protocol"
// and "every flag" loops instead of keeping lists by hand (docs/testing.md).
#pragma once

#include "common/cli_fwd.hpp"
#include "common/typed_options.hpp"

namespace avb::app {

// Adds both flags to `app`; each prints its table (rank 0) and exits 0, like
// --version. `declared` must outlive the parse: the flags are listed from it and
// from `app` (options declared without a type, such as --help, as kind "builtin").
void add_listing_flags(CLI::App& app, const FlagTable& declared);

}  // namespace avb::app
