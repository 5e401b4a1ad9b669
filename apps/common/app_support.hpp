// What both benchmark apps share: stop signals, error reporting, the OSU-style
// table, progress lines and the trace observer. Apps may print and exit; the
// library may not, so all of that lives here.
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/watch.hpp"
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

// Collective: the speed in flops/s of the slowest host running a peer under SMPI
// (what simulated computation is divided by); 0 on a real MPI.
double slowest_peer_speed();

// Prints "<program>: error: <message>" on stderr, once (rank 0 only).
void report_error(const std::string& program, const std::string& message);

std::string join_command_line(int argc, char** argv);

// Conversions of flag values that throw ConfigError("--flag: 'text' is not ...").
long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max);
double parse_real(const std::string& flag, const std::string& text, const std::string& accepted);
std::uint64_t parse_seed(const std::string& flag, const std::string& text);

// Refuses, with a ConfigError naming `flag`, a run whose peers on this machine
// would need more memory than it has (bytes_per_peer: the app's estimate for
// one peer): better one line now than std::bad_alloc or the OOM killer mid-run.
// Peers on this machine: all of them under SMPI (one process), else the launcher's
// local rank count (OMPI_COMM_WORLD_LOCAL_SIZE, MPI_LOCALNRANKS), else 1.
void check_memory(const std::string& flag, const std::string& value, double bytes_per_peer, int n_peers);

// Refuses arguments CLI11 did not recognise (collected with allow_extras).
void refuse_extras(const std::vector<std::string>& extras);
// The same for app.remaining(), and refuses an empty --config, --out, --data or
// --test-data typed on the command line (argc, argv: main's).
void refuse_extras(const CLI::App& app, int argc, char** argv);
// Refuses a --config file that gives an option more than once, in any spelling
// CLI11 reads as that option (rounds, "rounds", 'rounds', --rounds): CLI11 keeps
// the first and drops the others without a word. Consecutive lines of one key are
// one item to CLI11 (a repeatable flag's values); for others it refuses them.
// `items`: the file as CLI11's config reader returns it.
void refuse_repeated_config_keys(const CLI::App& app, const std::vector<CLI::ConfigItem>& items);
// The same for the file named by --config, if any (after app.parse()).
void refuse_repeated_config_keys(const CLI::App& app);
// `message` as one printable line: newlines as blanks, control bytes and bytes
// that are not UTF-8 as \xHH.
std::string printable(const std::string& message);
// CLI11's parse errors as one line that starts with the flag concerned.
std::string explain(const CLI::ParseError& error);

// Every rank parses the same arguments; the verdicts are combined, so that a file
// readable on some nodes only (--config) cannot leave ranks waiting for others
// that quit. False (after rank 0 reported the problem) unless all ranks parsed.
bool options_agreed(const std::string& program, const std::string& problem);

// The root attributes of a trace, from the command line and the MPI library.
RunInfo run_info(int argc, char** argv, const std::string& run_kind, const std::string& version,
                 const std::string& git_sha);

// Collective. Rank 0 alone touches the file system: it checks --out (the one
// check, avb::check_trace_destination: a new file in an existing writable folder,
// or with --overwrite an existing regular file, never a FIFO, device or socket),
// creates the trace and writes /config; the others learn whether that worked. Returns false
// (after rank 0 reported why) when it did not; `trace` stays empty on other ranks
// and when out is empty. Installs the stop handlers first, so that a signal
// cannot leave the temporary file behind.
bool open_trace(const std::string& program, const std::string& out, bool overwrite, const RunInfo& info,
                const KeyValues& described, const std::string& config_text, std::unique_ptr<TraceWriter>& trace);

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

// Collective, after the run: the exit code. 1, after rank 0 reported
// `trace_error` (rank 0's), when the trace could not be written; 128+signal when
// stopped by a signal; else 0.
int exit_code(const std::string& program, const std::string& trace_error, bool stopped);

// A run that cannot go on: a stall past --round-timeout (Stalled), or under SMPI a
// deadlock that SimGrid found. Rank 0 has saved what it had (`save`); then one
// line, "<program>: error: <message>", and every process ends with kExitStalled
// (through MPI_Abort, since other ranks may be blocked).
constexpr int kExitStalled = 3;
[[noreturn]] void abort_run(const std::string& program, const std::string& message);

// Under SMPI, from construction to destruction: when SimGrid finds that no
// simulated peer can move, call `save` (rank 0's trace, marked incomplete), print
// one line saying what the peers were blocked in (core/watch.hpp), and end the
// simulation with kExitStalled. Elsewhere it does nothing: --round-timeout covers
// real MPI. Construct it on rank 0 only.
class DeadlockGuard {
 public:
  DeadlockGuard(std::string program, std::function<void()> save);
  ~DeadlockGuard();
  DeadlockGuard(const DeadlockGuard&) = delete;
  DeadlockGuard& operator=(const DeadlockGuard&) = delete;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

// Returns run(); when the run cannot go on (a Stalled from any rank, or under SMPI
// a deadlock), rank 0's `reporter` keeps its trace as incomplete (abandon()), one
// line is printed and the job ends with kExitStalled.
template <class Reporter, class Run>
auto run_guarded(const std::string& program, int rank, Reporter& reporter, Run run) {
  std::optional<DeadlockGuard> deadlock;
  if (rank == 0) deadlock.emplace(program, [&reporter] { reporter.abandon(); });
  try {
    return run();
  } catch (const Stalled& e) {
    if (rank == 0) reporter.abandon();
    abort_run(program, e.what());
  }
}

// mean +- standard error (0 for fewer than two values).
struct MeanSe {
  double mean = 0, se = 0;
};
MeanSe mean_se(const std::vector<double>& values);

// Prints "<program>: warning: <message>" on stderr, once (rank 0 only).
void report_warning(const std::string& program, const std::string& message);

// Decode failures count as persistent when a trial has any in its last
// kPersistentDecodeRows rows (rounds; sgd_bench: evaluations), all rows when it
// has fewer: the quantizer then no longer fits the values' spread at the end of
// the run, when they are closest.
inline constexpr int kPersistentDecodeRows = 10;
std::int64_t late_decode_failures(const std::vector<std::int32_t>& per_row);
// One warning line (report_warning) when any trial's failures were persistent,
// naming the count, the trials and what to change; nothing otherwise. `rows` is
// "rounds" or "evaluations".
void warn_persistent_decode_failures(const std::string& program, const std::vector<std::int64_t>& late_per_trial,
                                     const char* rows);
template <class Trial>
void warn_persistent_decode_failures(const std::string& program, const std::vector<Trial>& trials,
                                     const char* rows) {
  std::vector<std::int64_t> late;
  for (const auto& trial : trials) {
    std::vector<std::int32_t> per_row;
    for (const auto& row : trial.rows) per_row.push_back(row.decode_failures);
    late.push_back(late_decode_failures(per_row));
  }
  warn_persistent_decode_failures(program, late, rows);
}

// Rank 0's observer: prints the table, writes the trace, shows progress.
class Reporter final : public AveragingObserver {
 public:
  Reporter(const AveragingOptions& options, std::unique_ptr<TraceWriter> trace, bool quiet);

  void print_header(const std::string& program, const RunInfo& info, const KeyValues& options) const;
  void on_round(const TrialRecord& trial, const RoundRow& row) override;
  void on_trial(const TrialRecord& trial) override;
  bool stop_requested() override { return stop_signal() != 0 || !trace_error_.empty(); }
  // Mean +- standard error over the trials, then the trace is finished.
  void finish(const std::vector<TrialRecord>& trials, bool complete);
  // The run cannot go on: the trace keeps the trials written so far, complete = 0.
  void abandon() {
    write_guarded(trace_, trace_error_, [](TraceWriter& t) { t.finish(false); });
  }
  // Why the trace could not be written (rank 0; empty when it was).
  const std::string& trace_error() const { return trace_error_; }

 private:
  AveragingOptions options_;
  std::unique_ptr<TraceWriter> trace_;
  std::string trace_error_;
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
