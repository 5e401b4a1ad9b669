// The trace file of a run: its root attributes, opening it on rank 0, and
// writes that turn a failure into one line naming --out.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/cli_fwd.hpp"
#include "common/file_identity.hpp"
#include "core/error.hpp"
#include "sim/topology.hpp"
#include "trace/trace.hpp"

namespace avb::app {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// The output flags both programs take (run_flags.hpp adds them).
struct OutputFlags {
  std::string out;
  std::string summary;  // --summary: the per-trial table as CSV or JSON (summary_output.hpp)
  bool overwrite = false;
  bool quiet = false;
  bool dry_run = false;  // --dry-run: print the run's estimate and exit
  int progress_every = 3;  // --progress-every: seconds between plain progress lines
  // The files the run reads (--config, --data, ...): no output may be one of them.
  NamedPaths inputs;
  // Options whose values are text however they look (file names: --out 007), for
  // the --summary identity columns.
  std::set<std::string> text_keys;
};

// Records in `output` the files the parsed command line names (cli_checks.hpp,
// file_options), with a --topology file:PATH among the inputs.
void note_files(const CLI::App& app, const std::optional<TopologySpec>& topology, OutputFlags& output);

// The root attributes of a trace, from the command line and the MPI library.
RunInfo run_info(int argc, char** argv, const std::string& run_kind, const std::string& version,
                 const std::string& git_sha);

// Collective. Rank 0 alone touches the file system: it checks that --out and
// --summary are distinct files, none of them an input (output_clash), --summary's
// destination (summary_destination_problem) and --out (the one
// check, avb::check_trace_destination: a new file in an existing writable folder,
// or with --overwrite an existing regular file, never a FIFO, device or socket),
// creates the trace and writes /config (`described`, to which "out" is added
// when a trace is asked for, and "summary" when a summary is, and `config_text`); the others learn whether that worked. Returns false
// (after rank 0 reported why) when it did not; `trace` stays empty on other ranks
// and when out is empty. Installs the stop handlers first, so that a signal
// cannot leave the temporary file behind.
bool open_trace(const std::string& program, const OutputFlags& output, const RunInfo& info, KeyValues& described,
                const std::string& config_text, std::unique_ptr<TraceWriter>& trace);

// What both programs do once the options are agreed: rank 0 prints the
// `warnings`; the trace is opened (open_trace) with `info` and `described`, which
// are kept in `start` for the header. False, after one line, when the trace
// cannot be opened.
struct RunStart {
  RunInfo info;
  KeyValues described;
  std::unique_ptr<TraceWriter> trace;
};
bool begin_run(const std::string& program, const std::vector<std::string>& warnings, const OutputFlags& output,
               const std::string& config_text, RunStart& start);

// Runs write(*trace) on rank 0's trace. A failure (a full file system, an I/O
// error) drops the trace, which removes its temporary file, and keeps in `error`
// one line naming --out and the cause; the reporter then asks the run to stop.
// An earlier file at the --out path is never touched: only finish() renames.
std::string trace_write_error(const std::string& path, const std::string& what);
template <class Write>
void write_guarded(std::unique_ptr<TraceWriter>& trace, std::string& error, Write write) {
  if (!trace) return;
  try {
    write(*trace);
  } catch (const Error& e) {
    error = trace_write_error(trace->path().string(), e.what());
    trace.reset();
  }
}

}  // namespace avb::app
