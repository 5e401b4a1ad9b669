#include "common/mpi_entry.hpp"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
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
std::atomic<bool> g_stop_requested{false};       // the same, for library code that polls an atomic
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
extern "C" void on_stop_signal(int signo) {
  g_stop_signal = signo;
  g_stop_requested.store(true, std::memory_order_relaxed);
}
Host* g_host = nullptr;  // see set_host()
bool g_table_to_stderr = false;  // see table_to_stderr()
}  // namespace

void set_host(Host* host) { g_host = host; }
Host* host() { return g_host; }
std::FILE* table_out() { return g_host != nullptr ? g_host->table() : g_table_to_stderr ? stderr : stdout; }
void table_to_stderr(bool yes) { g_table_to_stderr = yes; }

void request_stop(int signo) { on_stop_signal(signo); }
void clear_stop() {
  g_stop_signal = 0;
  g_stop_requested.store(false, std::memory_order_relaxed);
}

bool mpi_running() {
  int started = 0, ended = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&ended);
  return started != 0 && ended == 0;
}

namespace {
// A sequential run started on its own (no MPI launcher in the environment) needs
// no MPI at all: starting a singleton MPI costs a sweep of small runs more than
// the runs themselves. Under a launcher MPI starts, so that run_peers can refuse
// a sequential run spread over several processes.
bool runs_alone(int argc, char** argv) {
  if (engine_name() == "smpi") return false;
  for (const char* launched : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(launched) != nullptr) return false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--engine=sequential" || (arg == "--engine" && i + 1 < argc && std::string(argv[i + 1]) == "sequential"))
      return true;
  }
  return false;
}
}  // namespace

int world_rank() {
  int rank = 0;
  if (mpi_running()) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

World world() {
  World w;
  if (!mpi_running()) return w;  // one process, no simulated hosts
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  const double mine = host_speed();
  check_mpi(MPI_Allreduce(&mine, &w.slowest_speed, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
  return w;
}

int max_over_ranks(int value) {
  if (mpi_running()) check_mpi(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return value;
}

std::optional<int> options_verdict(const std::string& program, const std::string& problem, const std::string& doing,
                                   bool stopped) {
  // One collective for both verdicts: a rank's stop signal (above kProblem)
  // outranks a problem. A stop whose number is not known yet counts as SIGTERM.
  constexpr int kProblem = 1;
  const int signal = doing.empty() ? 0 : stop_signal() > 0 ? stop_signal() : stopped ? SIGTERM : 0;
  const int verdict = max_over_ranks(signal > 0 ? kProblem + signal : problem.empty() ? 0 : kProblem);
  if (verdict > kProblem) {
    report_error(program, "stopped by signal " + std::to_string(verdict - kProblem) + " while " + doing +
                              "; nothing was written");
    return 128 + verdict - kProblem;
  }
  if (verdict == 0) return std::nullopt;
  report_error(program, problem.empty() ? "the options could not be read on every rank (is the --config file on a "
                                          "file system all nodes see?)"
                                        : problem);
  return 2;
}

bool options_agreed(const std::string& program, const std::string& problem) {
  return !options_verdict(program, problem, "");
}

namespace {
// Ranks beyond this many per core of a host make a real MPI run crawl (each rank
// gets a sliver of a core, and Open MPI took minutes to start 512 on two cores).
constexpr int kRanksPerCore = 8;

// Once, from rank 0, before the run: a host that holds many more ranks than cores.
// Collective over MPI_COMM_WORLD; the simulated engines have no such hosts.
void warn_if_crowded(const char* program) {
  if (engine_name() == "smpi") return;
  MPI_Comm host = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host),
            "MPI_Comm_split_type");
  int here = 0, most = 0, size = 0;
  MPI_Comm_size(host, &here);
  MPI_Comm_free(&host);
  check_mpi(MPI_Allreduce(&here, &most, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (most <= kRanksPerCore * cores) return;
  report_warning(program, std::to_string(most) + " ranks share a host of " + std::to_string(cores) +
                              " cores: each gets a sliver of a core and Open MPI starts them slowly (minutes "
                              "at hundreds of ranks). For " + std::to_string(size) +
                              " peers on one machine use --engine sequential --peers N (the same values, "
                              "an estimate of time) or SMPI (scripts/smpirun.sh, simulated time)");
}
}  // namespace

int run_with_mpi(int argc, char** argv, const char* program, int (*run)(int, char**)) {
  const bool alone = runs_alone(argc, argv);
  if (!alone) {
    MPI_Init(&argc, &argv);
    warn_if_crowded(program);
  }
  int rc = 1;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error on rank %d: %s\n", program, world_rank(), e.what());
    std::fflush(stderr);
    if (!alone) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  if (!alone) MPI_Finalize();
  return rc;
}

void install_stop_handlers() {
  if (g_host != nullptr) return;  // the host owns the signals and forwards them (request_stop)
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }
const std::atomic<bool>* stop_flag() { return &g_stop_requested; }

void report_error(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  const std::string line = printable(message);
  if (g_host != nullptr) return g_host->report("error", line);
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), line.c_str());
  std::fflush(stderr);
}

void report_warning(const std::string& program, const std::string& message) {
  if (world_rank() != 0) return;
  if (g_host != nullptr) return g_host->report("warning", printable(message));
  std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
}

int exit_code(const std::string& program, const std::string& trace_error, bool stopped) {
  int failed = trace_error.empty() ? 0 : 1;
  if (mpi_running()) check_mpi(MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (failed) {
    report_error(program, trace_error);
    return 1;
  }
  if (stopped) return 128 + (stop_signal() ? stop_signal() : 15);
  return 0;
}

void abort_run(const std::string& program, const std::string& message) {
  if (g_host != nullptr) {  // one process, no MPI: the host gets the line and the code
    if (stop_signal() == 0) g_host->report("error", printable(message));
    throw HostedExit{stop_signal() != 0 ? 128 + stop_signal() : kExitStalled};
  }
  std::fflush(stdout);
  // A stop signal means the launcher is ending the job (Open MPI sends SIGCONT and
  // SIGTERM when another rank aborted, which may wake this one from a SIGSTOP):
  // the peer that aborted has printed the line already.
  if (stop_signal() != 0) std::_Exit(128 + stop_signal());
  std::fprintf(stderr, "%s: error: %s\n", program.c_str(), printable(message).c_str());
  std::fflush(stderr);
  if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, kExitStalled);
  std::_Exit(kExitStalled);  // MPI_Abort does not return
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
