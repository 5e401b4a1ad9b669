// Everything both benchmark apps share, by concern: the MPI entry and exits, text,
// flag values and typed options, CLI11 checks, the trace and the reporters.
#pragma once

#include "common/averaging_reporter.hpp"
#include "common/cli_checks.hpp"
#include "common/flag_values.hpp"
#include "common/mpi_entry.hpp"
#include "common/text.hpp"
#include "common/trace_output.hpp"
#include "common/typed_options.hpp"
