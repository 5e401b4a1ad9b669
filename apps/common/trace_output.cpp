#include "common/trace_output.hpp"

#include <mpi.h>

#include <CLI/CLI.hpp>

#include "common/cli_checks.hpp"
#include "common/mpi_entry.hpp"
#include "common/summary_output.hpp"
#include "common/text.hpp"
#include "core/comm.hpp"
#include "sim/compute.hpp"

namespace avb::app {

void note_files(const CLI::App& app, const std::optional<TopologySpec>& topology, OutputFlags& output) {
  file_options(app, {"--out", "--summary"}, output.inputs, output.text_keys);
  if (topology && topology->kind == TopologyKind::file) output.inputs.emplace_back("--topology", topology->path);
}

RunInfo run_info(int argc, char** argv, const std::string& run_kind, const std::string& version,
                 const std::string& git_sha) {
  RunInfo info;
  info.avbench_version = version;
  info.git_sha = git_sha;
  info.command_line = join_command_line(argc, argv);
  info.engine = engine_name();
  info.time_model = engine_name() == "smpi" ? "simulated" : "wall clock";
  info.mpi_library = mpi_library_version();
  int size = 1;
  if (mpi_running()) MPI_Comm_size(MPI_COMM_WORLD, &size);
  info.n_peers = size;
  info.run_kind = run_kind;
  return info;
}

bool open_trace(const std::string& program, const OutputFlags& output, const RunInfo& info, KeyValues& described,
                const std::string& config_text, std::unique_ptr<TraceWriter>& trace) {
  install_stop_handlers();
  table_to_stderr(output.summary == kSummaryToStdout);
  if (!output.out.empty()) described.emplace_back("out", output.out);
  if (!output.summary.empty()) described.emplace_back("summary", output.summary);
  int ok = 1;
  if (world_rank() == 0) {
    const std::string summary_file = output.summary == kSummaryToStdout ? "" : output.summary;
    std::string problem = output_clash({{"--out", output.out}, {"--summary", summary_file}}, output.inputs);
    if (problem.empty()) problem = summary_destination_problem(output.summary, output.overwrite);
    if (!problem.empty()) {
      report_error(program, problem);
      ok = 0;
    }
  }
  if (ok && world_rank() == 0 && !output.out.empty()) {
    try {
      trace = std::make_unique<TraceWriter>(output.out, output.overwrite, info);  // checks the destination first
      trace->write_config(described, config_text);
    } catch (const DestinationError& e) {
      const bool exists = e.reason() == DestinationError::Reason::exists;
      report_error(program, std::string("--out: ") + e.what() +
                                (exists ? " (pass --overwrite to replace it, or choose another name)" : ""));
      ok = 0;
    } catch (const Error& e) {
      trace.reset();
      report_error(program, std::string("--out: ") + e.what());
      ok = 0;
    }
  }
  if (mpi_running()) check_mpi(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (!ok) trace.reset();
  return ok != 0;
}

bool begin_run(const std::string& program, const std::vector<std::string>& warnings, const OutputFlags& output,
               const std::string& config_text, RunStart& start) {
  for (const std::string& line : warnings) report_warning(program, line);
  return open_trace(program, output, start.info, start.described, config_text, start.trace);
}

std::string trace_write_error(const std::string& path, const std::string& what) {
  // HDF5's messages run over several lines and end in a dump of the failed
  // write; the cause a user can act on is the errno text, when there is one.
  // A finished trace that could not be renamed is kept: the message says where.
  if (what.find("the trace was left at") != std::string::npos) return "--out: " + what;
  std::string cause = what;
  for (const char* known : {"No space left on device", "Disk quota exceeded", "Read-only file system",
                            "Input/output error", "File too large"})
    if (what.find(known) != std::string::npos) cause = known;
  if (cause == "No space left on device") cause += " (the file system is full)";
  return "--out: cannot write the trace " + path + ": " + cause +
         "; the run was stopped and nothing was written (an earlier file at that path is kept)";
}

}  // namespace avb::app
