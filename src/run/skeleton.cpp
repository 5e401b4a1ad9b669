#include "run/skeleton.hpp"

#include "core/error.hpp"
#include "sim/compute.hpp"

namespace avb {
namespace {

// Starts the watch before the trial's communicator is made: its duplication is
// collective and must be watched like any round.
std::uint64_t start_trial(Watch& watch, int index, const char* unit, std::uint64_t run_seed) {
  watch.start(index, unit, 0);
  return trial_seed(run_seed, index);
}

}  // namespace

Trial::Trial(const RunOptions& options, MPI_Comm world, Watch& watch, int index_, const char* unit)
    : index(index_),
      seed(start_trial(watch, index_, unit, options.seed)),
      comm(Comm::duplicate(world, &watch)),
      me(comm.rank()),
      n(comm.size()),
      failures(trial_failures(options, seed, n)),
      stragglers(seed, options.stragglers),
      protocol(make_protocol(options.protocol, comm)) {}

void Trial::charge_detection(const GroupCounters& counters, double timeout) {
  if (!counters.waited_on_failure) return;
  idle_seconds(timeout);
  detection += timeout;
}

int world_size(MPI_Comm world) {
  int n = 0;
  check_mpi(MPI_Comm_size(world, &n), "MPI_Comm_size");
  return n;
}

}  // namespace avb
