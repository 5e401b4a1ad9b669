// averaging_bench: trials of one averaging protocol on N peers (one per MPI rank),
// under simulated failures, with a table on stdout and an HDF5 trace.
//
//   mpirun -n 1024 averaging_bench --protocol allreduce --fail-rate 0.01 --out run.h5
//
// Exit codes: 0 done; 2 bad input (nothing written); 128+signal when stopped by
// SIGTERM/SIGINT (the trace holds the rounds done, complete = 0); 3 when the run
// cannot go on (--round-timeout, a deadlock under SMPI: the trace holds the trials
// done, complete = 0); 1 other errors.
#include "common/mpi_entry.hpp"
#include "common/programs.hpp"

int main(int argc, char** argv) {
  return avb::app::run_with_mpi(argc, argv, "averaging_bench", avb::app::averaging_program);
}
