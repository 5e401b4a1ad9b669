// What both benchmark apps share: stop signals, error reporting, the OSU-style
// table, progress lines and the trace observer. Apps may print and exit; the
// library may not, so all of that lives here.
#pragma once

#include <ctime>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "run/averaging.hpp"
#include "trace/trace.hpp"

namespace avb::app {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// SIGTERM and SIGINT set a flag that the run polls once per round; all ranks then
// stop after the same round (the flag is combined by a reduction). The flag is the
// one piece of mutable global state in avbench, on purpose: a signal is delivered
// to the process, so under SMPI every simulated rank should see it.
void install_stop_handlers();
int stop_signal();  // 0 when no stop was requested, else the signal number

// A program's main(): MPI_Init, run(argc, argv), MPI_Finalize, and its exit code.
// An exception on one rank mid-run takes the whole job down with MPI_Abort (the
// other ranks may be waiting in a collective), after one line naming the rank.
int run_with_mpi(int argc, char** argv, const char* program, int (*run)(int, char**));

// Prints "<program>: error: <message>" on stderr, once (rank 0 only).
void report_error(const std::string& program, const std::string& message);

std::string join_command_line(int argc, char** argv);

// Conversions of flag values that throw ConfigError("--flag: 'text' is not ...").
long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max);
double parse_real(const std::string& flag, const std::string& text, const std::string& accepted);
std::uint64_t parse_seed(const std::string& flag, const std::string& text);

// Refuses arguments CLI11 did not recognise (collected with allow_extras).
void refuse_extras(const std::vector<std::string>& extras);
// CLI11's parse errors as one line that starts with the flag concerned.
std::string explain(const CLI::ParseError& error);
// --out must name a new file in an existing folder, unless --overwrite.
void check_out_flag(const std::string& out, bool overwrite);

// Every rank parses the same arguments; the verdicts are combined, so that a file
// readable on some nodes only (--config) cannot leave ranks waiting for others
// that quit. False (after rank 0 reported the problem) unless all ranks parsed.
bool options_agreed(const std::string& program, const std::string& problem);

// The root attributes of a trace, from the command line and the MPI library.
RunInfo run_info(int argc, char** argv, const std::string& run_kind, const std::string& version,
                 const std::string& git_sha);

// Collective. Rank 0 alone touches the file system: it checks --out, creates the
// trace and writes /config; the others learn whether that worked. Returns false
// (after rank 0 reported why) when it did not; `trace` stays empty on other ranks
// and when out is empty. Installs the stop handlers first, so that a signal
// cannot leave the temporary file behind.
bool open_trace(const std::string& program, const std::string& out, bool overwrite, const RunInfo& info,
                const KeyValues& described, const std::string& config_text, std::unique_ptr<TraceWriter>& trace);

// mean +- standard error (0 for fewer than two values).
struct MeanSe {
  double mean = 0, se = 0;
};
MeanSe mean_se(const std::vector<double>& values);

// Rank 0's observer: prints the table, writes the trace, shows progress.
class Reporter final : public AveragingObserver {
 public:
  Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet);

  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const;
  void on_round(const TrialRecord& trial, const RoundRow& row) override;
  void on_trial(const TrialRecord& trial) override;
  bool stop_requested() override { return stop_signal() != 0; }
  // Mean +- standard error over the trials, then the trace is finished.
  void finish(const std::vector<TrialRecord>& trials, bool complete);

 private:
  AveragingOptions options_;
  std::unique_ptr<TraceWriter> trace_;
  bool quiet_;
  int peers_ = 0;
  // Wall-clock seconds from std::time(): under SMPI, clock_gettime (and so
  // std::chrono's clocks) returns simulated time, which says nothing about how
  // long the user has been waiting.
  std::time_t started_ = std::time(nullptr);
  std::time_t last_progress_ = started_;

 public:
  void set_peers(int n) { peers_ = n; }
};

}  // namespace avb::app
