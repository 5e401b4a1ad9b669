// An SMPI program that fails on purpose, for scripts/smpirun.sh's handling of
// failures (tests/scripts/test_smpi_output.sh):
//
//   misbehave deadlock            rank r waits for a message from rank r^1 before
//                                 sending anything: every pair waits forever, and
//                                 the program says nothing (no deadlock handler)
//   misbehave deadlock-reported   the same, with a SimGrid on-deadlock handler that
//                                 prints one "misbehave: error: deadlock: ..." line
//                                 and exits 3, as averaging_bench and sgd_bench do
//   misbehave exit S              every rank returns S without a word
//   misbehave abort               rank 1 calls MPI_Abort without a word while the
//                                 others wait in a barrier
#include <mpi.h>
#include <simgrid/s4u/Engine.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

void deadlock() {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int partner = rank ^ 1;
  if (partner >= size) return;
  int value = 0;
  MPI_Recv(&value, 1, MPI_INT, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Send(&value, 1, MPI_INT, partner, 0, MPI_COMM_WORLD);
}

void report_deadlock() {
  std::fprintf(stderr, "misbehave: error: deadlock: every rank waits for its partner\n");
  std::fflush(stderr);
  std::_Exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const char* mode = argc > 1 ? argv[1] : "deadlock";
  int rc = 0;
  if (std::strcmp(mode, "deadlock") == 0) {
    deadlock();
  } else if (std::strcmp(mode, "deadlock-reported") == 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // One handler for the whole simulation (every rank shares this program).
    if (rank == 0) simgrid::s4u::Engine::on_deadlock_cb(report_deadlock);
    MPI_Barrier(MPI_COMM_WORLD);
    deadlock();
  } else if (std::strcmp(mode, "abort") == 0) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (std::strcmp(mode, "exit") == 0 && argc > 2) {
    rc = std::atoi(argv[2]);
  } else {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) std::fprintf(stderr, "misbehave: error: unknown mode '%s' (deadlock, deadlock-reported, exit S, abort)\n", mode);
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
