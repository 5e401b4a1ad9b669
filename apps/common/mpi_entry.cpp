#include "common/mpi_entry.hpp"

#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#ifdef AVB_ENGINE_SMPI
#include <simgrid/s4u/Engine.hpp>
#endif

#include "common/text.hpp"
#include "core/comm.hpp"
#include "core/watch.hpp"
#include "sim/compute.hpp"

namespace avb::app {

namespace {
volatile std::sig_atomic_t g_stop_signal = 0;  // see install_stop_handlers()
extern "C" void on_stop_signal(int signo) { g_stop_signal = signo; }
}  // namespace

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

World world() {
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  const double mine = host_speed();
  check_mpi(MPI_Allreduce(&mine, &w.slowest_speed, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return w;
}

bool options_agreed(const std::string& program, const std::string& problem) {
  int parsed = problem.empty() ? 1 : 0, everywhere = 0;
  check_mpi(MPI_Allreduce(&parsed, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  if (everywhere) return true;
  report_error(program, problem.empty() ? "the options could not be read on every rank (is the --config file on a "
                                          "file system all nodes see?)"
                                        : problem);
  return false;
}

int run_with_mpi(int argc, char** argv, const char* program, int (*run)(int, char**)) {
  MPI_Init(&argc, &argv);
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error on rank %d: %s\n", program, world_rank(), e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return rc;
}

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

void report_error(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  const std::string line = printable(message);
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), line.c_str());
  std::fflush(stderr);
}

void report_warning(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
}

int exit_code(const std::string& program, const std::string& trace_error, bool stopped) {
  int failed = trace_error.empty() ? 0 : 1;
  check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (failed) {
    report_error(program, trace_error);
    return 1;
  }
  if (stopped) return 128 + (stop_signal() ? stop_signal() : 15);
  return 0;
}

void abort_run(const std::string& program, const std::string& message) {
  std::fflush(stdout);
  // A stop signal means the launcher is ending the job (Open MPI sends SIGCONT and
  // SIGTERM when another rank aborted, which may wake this one from a SIGSTOP):
  // the peer that aborted has printed the line already.
  if (stop_signal() != 0) std::_Exit(128 + stop_signal());
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, kExitStalled);
  std::_Exit(kExitStalled);  // MPI_Abort does not return; this is for the compiler
}

struct DeadlockGuard::State {
  std::string program;
  std::function<void()> save;
};

DeadlockGuard::DeadlockGuard(std::string program, std::function<void()> save)
    : state_(std::make_shared<State>(State{std::move(program), std::move(save)})) {
#ifdef AVB_ENGINE_SMPI
  // SimGrid calls this from its own context once no actor can move, before it
  // kills them all; nothing can be sent any more, so no MPI here.
  simgrid::s4u::Engine::on_deadlock_cb([state = state_] {
    const std::string blocked = describe_blocked_peers();
    if (state->save) state->save();
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: deadlock: no simulated peer can move: %s\n", state->program.c_str(),
                 printable(blocked).c_str());
    std::fflush(stderr);
    std::_Exit(kExitStalled);
  });
#endif
}

DeadlockGuard::~DeadlockGuard() { state_->save = nullptr; }

}  // namespace avb::app
