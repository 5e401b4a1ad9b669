// A program that deadlocks on purpose under SMPI, to test what a user sees when
// SimGrid finds that no simulated peer can move: the apps' DeadlockGuard runs the
// save step (here: writes the file named by argv[1]), prints one line naming what
// every peer was blocked in (from their Watch), and ends with status 3.
//
//   scripts/smpirun.sh -n N build-smpi/tests/deadlock_probe SAVED_FILE
//
// Ranks 0 and 1 each wait for the other's message (trial 0, round 1); the others
// wait in a barrier that ranks 0 and 1 never reach.
#include <mpi.h>

#include <cstdio>
#include <optional>

#include "common/app_support.hpp"
#include "core/comm.hpp"
#include "core/watch.hpp"

namespace {

int run(int argc, char** argv) {
  avb::Watch watch(MPI_COMM_WORLD, 0.0);
  avb::Comm comm = avb::Comm::duplicate(MPI_COMM_WORLD);
  comm.set_watch(&watch);
  watch.start(0, "round", 1);
  std::optional<avb::app::DeadlockGuard> guard;
  const char* saved = argc > 1 ? argv[1] : "/dev/null";
  if (comm.rank() == 0)
    guard.emplace("deadlock_probe", [saved] {
      if (std::FILE* f = std::fopen(saved, "w")) {
        std::fputs("saved\n", f);
        std::fclose(f);
      }
    });
  double value = 0.0;
  if (comm.rank() < 2)
    comm.recv<double>(std::span<double>(&value, 1), 1 - comm.rank(), 1);
  else
    comm.barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return avb::app::run_with_mpi(argc, argv, "deadlock_probe", run); }
