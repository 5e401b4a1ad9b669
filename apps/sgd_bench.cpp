// sgd_bench: local SGD on N peers (one per MPI rank, or all in this process with
// --engine sequential --peers N) with any averaging protocol,
// on a quadratic or logistic problem, under simulated failures; a table on stdout
// and an HDF5 trace.
//
//   mpirun -n 64 sgd_bench --protocol moshpit --objective quadratic --steps 500 --out run.h5
//
// Exit codes as averaging_bench: 0 done; 2 bad input (nothing written); 128+signal
// when stopped by SIGTERM/SIGINT (the trace holds what was measured, complete = 0);
// 1 other errors.
#include "common/mpi_entry.hpp"
#include "common/programs.hpp"

int main(int argc, char** argv) { return avb::app::run_with_mpi(argc, argv, "sgd_bench", avb::app::training_program); }
