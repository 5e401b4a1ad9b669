// A program's entry under MPI and its ends: stop signals, the one-line error and
// warning reports, the combined verdict on the options, exit codes and the abort
// of a run that cannot go on.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "common/host.hpp"
#include "core/watch.hpp"

namespace avb::app {

// SIGTERM and SIGINT set a flag that the run polls once per round; all ranks then
// stop after the same round (the flag is combined by a reduction). The flag is the
// one piece of mutable global state in avbench, on purpose: a signal is delivered
// to the process, so under SMPI every simulated rank should see it.
void install_stop_handlers();
int stop_signal();  // 0 when no stop was requested, else the signal number
const std::atomic<bool>* stop_flag();  // set with it: what a library loop polls

// A program's main(): MPI_Init, run(argc, argv), MPI_Finalize, and its exit code
// (no MPI at all for a sequential run started on its own).
// An exception on one rank mid-run takes the whole job down with MPI_Abort (the
// other ranks may be waiting in a collective), after one line naming the rank.
int run_with_mpi(int argc, char** argv, const char* program, int (*run)(int, char**));

// The world a program runs in. Collective: slowest_speed is the speed in flops/s
// of the slowest host running a peer under SMPI (what simulated computation is
// divided by), 0 on a real MPI.
struct World {
  int rank = 0;
  int size = 1;
  double slowest_speed = 0.0;
};
World world();

// Prints "<program>: error: <message>" on stderr, once (rank 0 only).
void report_error(const std::string& program, const std::string& message);

// This process's rank in MPI_COMM_WORLD (0 without MPI).
int world_rank();

// Whether MPI is running in this process. A sequential run started without a
// launcher (--engine sequential) runs without MPI: the programs' collective steps
// are then those of a world of one.
bool mpi_running();

// Prints "<program>: warning: <message>" on stderr, once (rank 0 only).
void report_warning(const std::string& program, const std::string& message);

// Every rank parses the same arguments; the verdicts are combined, so that a file
// readable on some nodes only (--config) cannot leave ranks waiting for others
// that quit. False (after rank 0 reported the problem) unless all ranks parsed.
bool options_agreed(const std::string& program, const std::string& problem);
// The same, where a stop signal may have come while `doing` (checking the
// options), or cut it short (`stopped`: a StopRequested was caught): the exit
// code once rank 0 reported why (128 + the signal, or 2 for a problem), or none
// when every rank may go on.
std::optional<int> options_verdict(const std::string& program, const std::string& problem, const std::string& doing,
                                   bool stopped = false);

// Collective: the largest of every rank's `value` (the value itself when MPI is
// not running), for verdicts all ranks must share.
int max_over_ranks(int value);

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
  } catch (const Error& e) {  // a counter that would wrap, a time that is not finite: the run cannot go on
    if (rank == 0) reporter.abandon();
    abort_run(program, e.what());
  } catch (const std::bad_alloc&) {
    if (rank == 0) reporter.abandon();
    abort_run(program, "out of memory: the run needed more than this machine (or ulimit -v) gives it; see --dry-run");
  }
}

}  // namespace avb::app
